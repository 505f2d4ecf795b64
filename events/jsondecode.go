package events

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
)

// This file holds the JSON decoders of the payload types. Each decodes into a
// shadow of its own type (so encoding/json does the work) whose "v" and id
// fields are kept raw: the version is checked first, ids may be strings or
// integers, and nested payloads get their path in error messages.

// plainPrefix is the name encoding/json gives the embedded shadow type in
// error paths; it is cut off.
const plainPrefix = "plain"

// jsonError turns an error of encoding/json into a bad payload error.
func jsonError(err error) error {
	if err == nil || errors.Is(err, ErrBadPayload) {
		return err
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == plainPrefix {
			field = ""
		}
		field = strings.TrimPrefix(field, plainPrefix+".")
		if field == "" {
			return badPayload("json: payload is %s, want object", te.Value)
		}
		return wrongType(field, te.Value, jsonTypeName(te.Type))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return badPayload("json: %v at byte %d", se, se.Offset)
	}
	return badPayload("json: %v", err)
}

func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "value"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "non-negative integer"
	case reflect.Bool:
		return "bool"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Float32, reflect.Float64:
		return "number"
	}
	return "object"
}

// rawKind names the JSON type of raw text.
func rawKind(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

func absent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// jsonVersion checks a raw "v".
func jsonVersion(raw json.RawMessage) (int, error) {
	if absent(raw) {
		return 0, &FieldError{Field: "v", Problem: problemMissing}
	}
	if k := rawKind(raw); k != "number" {
		return 0, wrongType("v", k, "integer")
	}
	n, err := strconv.ParseInt(string(raw), 10, 32)
	if err != nil {
		return 0, versionTextError(string(raw))
	}
	if n != Version {
		return int(n), versionError(n)
	}
	return int(n), nil
}

// jsonID reads a raw step or call id: a string, or an integer that becomes
// its decimal text. Absent or null gives "".
func jsonID(raw json.RawMessage, field string, dst *string) error {
	if absent(raw) {
		*dst = ""
		return nil
	}
	if rawKind(raw) != "number" {
		return jsonString(raw, field, dst)
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		*dst = strconv.FormatInt(n, 10)
		return nil
	}
	if n, err := strconv.ParseUint(string(raw), 10, 64); err == nil {
		*dst = strconv.FormatUint(n, 10)
		return nil
	}
	return wrongType(field, "non-integer number "+quoteShort(string(raw)), "string")
}

// jsonString reads a raw string that is present.
func jsonString(raw json.RawMessage, field string, dst *string) error {
	if k := rawKind(raw); k != "string" {
		return wrongType(field, k, "string")
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return &FieldError{Field: field, Problem: err.Error()}
	}
	return nil
}

// finishJSON orders the outcome of a shadow decode: a wrong version wins
// over everything (a future version may have another shape), then errors of
// encoding/json, then a missing version, then the checks in rest. Every step
// runs, so the value holds whatever could be read.
func finishJSON(err error, v json.RawMessage, dst *int, rest ...func() error) error {
	ver, verr := jsonVersion(v)
	*dst = ver
	var rerr error
	for _, f := range rest {
		if e := f(); e != nil && rerr == nil {
			rerr = e
		}
	}
	switch {
	case errors.Is(verr, ErrUnsupportedVersion):
		return verr
	case err != nil:
		return jsonError(err)
	case verr != nil:
		return verr
	}
	return rerr
}

// UnmarshalJSON implements json.Unmarshaler.
func (p *PreStep) UnmarshalJSON(b []byte) error {
	type plain PreStep
	*p = PreStep{}
	w := struct {
		*plain
		V    json.RawMessage `json:"v"`
		Step json.RawMessage `json:"step"`
	}{plain: (*plain)(p)}
	err := json.Unmarshal(b, &w)
	return finishJSON(err, w.V, &p.V, func() error { return jsonID(w.Step, "step", &p.Step) })
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *SkillCall) UnmarshalJSON(b []byte) error {
	type plain SkillCall
	*c = SkillCall{}
	w := struct {
		*plain
		V    json.RawMessage `json:"v"`
		Call json.RawMessage `json:"call"`
		Args json.RawMessage `json:"args"`
	}{plain: (*plain)(c)}
	err := json.Unmarshal(b, &w)
	return finishJSON(err, w.V, &c.V,
		func() error { return jsonID(w.Call, "call", &c.Call) },
		func() error { return c.Args.fromJSON(w.Args) },
	)
}

// fromJSON reads the raw "args" of a skill call: an object with a string
// "name" (which may be empty: the tool itself reports that name as invalid).
func (a *SkillArgs) fromJSON(raw json.RawMessage) error {
	if absent(raw) {
		return &FieldError{Field: "args", Problem: problemMissing}
	}
	if k := rawKind(raw); k != "object" {
		return wrongType("args", k, "object")
	}
	var w struct {
		Name json.RawMessage `json:"name"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return prefixField("args", jsonError(err))
	}
	if absent(w.Name) {
		return &FieldError{Field: "args.name", Problem: problemMissing}
	}
	return jsonString(w.Name, "args.name", &a.Name)
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *Compaction) UnmarshalJSON(b []byte) error {
	type plain Compaction
	*c = Compaction{}
	w := struct {
		*plain
		V json.RawMessage `json:"v"`
	}{plain: (*plain)(c)}
	err := json.Unmarshal(b, &w)
	return finishJSON(err, w.V, &c.V)
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *Catalog) UnmarshalJSON(b []byte) error {
	type plain Catalog
	*c = Catalog{}
	w := struct {
		*plain
		V    json.RawMessage `json:"v"`
		Step json.RawMessage `json:"step"`
	}{plain: (*plain)(c)}
	err := json.Unmarshal(b, &w)
	return finishJSON(err, w.V, &c.V, func() error { return jsonID(w.Step, "step", &c.Step) })
}

// UnmarshalJSON implements json.Unmarshaler.
func (x *Decision) UnmarshalJSON(b []byte) error {
	type plain Decision
	*x = Decision{}
	w := struct {
		*plain
		V       json.RawMessage `json:"v"`
		Step    json.RawMessage `json:"step"`
		Catalog json.RawMessage `json:"catalog"`
	}{plain: (*plain)(x)}
	err := json.Unmarshal(b, &w)
	return finishJSON(err, w.V, &x.V,
		func() error { return jsonID(w.Step, "step", &x.Step) },
		func() error {
			if absent(w.Catalog) {
				return nil
			}
			if k := rawKind(w.Catalog); k != "object" {
				return wrongType("catalog", k, "object")
			}
			c := new(Catalog)
			if err := c.UnmarshalJSON(w.Catalog); err != nil {
				return prefixField("catalog", err)
			}
			x.Catalog = c
			return nil
		},
	)
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *ToolResult) UnmarshalJSON(b []byte) error {
	type plain ToolResult
	*r = ToolResult{}
	w := struct {
		*plain
		V    json.RawMessage `json:"v"`
		Call json.RawMessage `json:"call"`
	}{plain: (*plain)(r)}
	err := json.Unmarshal(b, &w)
	return finishJSON(err, w.V, &r.V, func() error { return jsonID(w.Call, "call", &r.Call) })
}
