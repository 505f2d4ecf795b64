package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// DecodePreStep decodes and validates a PreStep.
func DecodePreStep(enc Encoding, b []byte) (PreStep, error) {
	return decodeVersioned[PreStep, preStepWire](LayoutFlat, enc, b)
}

// DecodePreStepIn is DecodePreStep with the session id checked in layout l.
func DecodePreStepIn(l Layout, enc Encoding, b []byte) (PreStep, error) {
	return decodeVersioned[PreStep, preStepWire](l, enc, b)
}

// DecodeSkillCall decodes and validates a SkillCall.
func DecodeSkillCall(enc Encoding, b []byte) (SkillCall, error) {
	return decodeVersioned[SkillCall, skillCallWire](LayoutFlat, enc, b)
}

// DecodeSkillCallIn is DecodeSkillCall with the session id checked in layout l.
func DecodeSkillCallIn(l Layout, enc Encoding, b []byte) (SkillCall, error) {
	return decodeVersioned[SkillCall, skillCallWire](l, enc, b)
}

// DecodeSkillSearch decodes and validates a SkillSearch. Its arguments
// are read as given (see SearchArgs): a wrong type of query, limit or
// offset is no decoding error.
func DecodeSkillSearch(enc Encoding, b []byte) (SkillSearch, error) {
	return decodeVersioned[SkillSearch, skillSearchWire](LayoutFlat, enc, b)
}

// DecodeSkillSearchIn is DecodeSkillSearch with the session id checked in layout l.
func DecodeSkillSearchIn(l Layout, enc Encoding, b []byte) (SkillSearch, error) {
	return decodeVersioned[SkillSearch, skillSearchWire](l, enc, b)
}

// DecodeCompaction decodes and validates a Compaction.
func DecodeCompaction(enc Encoding, b []byte) (Compaction, error) {
	return decodeVersioned[Compaction, compactionWire](LayoutFlat, enc, b)
}

// DecodeCompactionIn is DecodeCompaction with the session id checked in layout l.
func DecodeCompactionIn(l Layout, enc Encoding, b []byte) (Compaction, error) {
	return decodeVersioned[Compaction, compactionWire](l, enc, b)
}

// DecodeCatalog decodes and validates a Catalog.
func DecodeCatalog(enc Encoding, b []byte) (Catalog, error) {
	return decodeVersioned[Catalog, catalogWire](LayoutFlat, enc, b)
}

// DecodeCatalogIn is DecodeCatalog with the session id checked in layout l.
func DecodeCatalogIn(l Layout, enc Encoding, b []byte) (Catalog, error) {
	return decodeVersioned[Catalog, catalogWire](l, enc, b)
}

// DecodeCatalogHead decodes and validates a CatalogHead.
func DecodeCatalogHead(enc Encoding, b []byte) (CatalogHead, error) {
	return decodeVersioned[CatalogHead, catalogHeadWire](LayoutFlat, enc, b)
}

// DecodeCatalogHeadIn is DecodeCatalogHead with the session id checked in layout l.
func DecodeCatalogHeadIn(l Layout, enc Encoding, b []byte) (CatalogHead, error) {
	return decodeVersioned[CatalogHead, catalogHeadWire](l, enc, b)
}

// DecodeSkillInvocation decodes and validates a SkillInvocation.
func DecodeSkillInvocation(enc Encoding, b []byte) (SkillInvocation, error) {
	return decodeVersioned[SkillInvocation, skillInvocationWire](LayoutFlat, enc, b)
}

// DecodeSkillInvocationIn is DecodeSkillInvocation with the session id checked in layout l.
func DecodeSkillInvocationIn(l Layout, enc Encoding, b []byte) (SkillInvocation, error) {
	return decodeVersioned[SkillInvocation, skillInvocationWire](l, enc, b)
}

// DecodeToolResult decodes and validates a ToolResult.
func DecodeToolResult(enc Encoding, b []byte) (ToolResult, error) {
	return decodeVersioned[ToolResult, toolResultWire](LayoutFlat, enc, b)
}

// DecodeToolResultIn is DecodeToolResult with the session id checked in layout l.
func DecodeToolResultIn(l Layout, enc Encoding, b []byte) (ToolResult, error) {
	return decodeVersioned[ToolResult, toolResultWire](l, enc, b)
}

// DecodeDecision decodes and validates a Decision.
func DecodeDecision(enc Encoding, b []byte) (Decision, error) {
	return decodeVersioned[Decision, decisionWire](LayoutFlat, enc, b)
}

// DecodeDecisionIn is DecodeDecision with the session id checked in layout l.
func DecodeDecisionIn(l Layout, enc Encoding, b []byte) (Decision, error) {
	return decodeVersioned[Decision, decisionWire](l, enc, b)
}

// DecodeToolDefinition decodes and validates a ToolDefinition (which has no
// "v").
func DecodeToolDefinition(enc Encoding, b []byte) (ToolDefinition, error) {
	var t ToolDefinition
	err := decode(enc, b, &t)
	if err == nil {
		err = t.Validate()
	}
	return t, err
}

// DecodeToolDefinitions decodes and validates the answer on
// ToolDefinitionsSubject: a list of ToolDefinition (which have no "v").
func DecodeToolDefinitions(enc Encoding, b []byte) ([]ToolDefinition, error) {
	var defs []ToolDefinition
	if len(b) > MaxPayloadSize {
		return nil, tooLarge(len(b))
	}
	var err error
	switch enc {
	case Msgpack:
		if err = checkMsgpack(b); err != nil {
			return nil, err
		}
		if k := codeKind(b[0]); k != kindArray {
			return nil, badPayload("msgpack: payload is %s, want array", k)
		}
		err = decodeMsgpack(b, reflect.ValueOf(&defs).Elem(), "")
	case JSON:
		if err = checkJSONDepth(b); err != nil {
			return nil, err
		}
		if err = json.Unmarshal(b, &defs); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field == "" {
				return nil, badPayload("json: payload is %s, want array", te.Value)
			}
			err = jsonError(err)
		}
	default:
		return nil, badPayload("unknown encoding %v", enc)
	}
	if err != nil {
		return defs, err
	}
	if defs == nil {
		return nil, badPayload("tool definitions: null, want array")
	}
	for i, d := range defs {
		if err := d.Validate(); err != nil {
			return defs, prefixField("["+strconv.Itoa(i)+"]", err)
		}
	}
	return defs, nil
}

// unwrapper is a wire form that does unwrap's work itself, without
// reflection: the triggers, decoded for every delivery.
type unwrapper[T any] interface {
	unwrap() (*T, *int)
}

// finisher is a wire form with more to do than unwrap.
type finisher[T any] interface {
	finish(*T) error
}

// decodeVersioned decodes a payload T with "v" through its wire form W and
// orders what went wrong: a version other than 1 wins over everything (a
// later version may have another shape), then decoding errors, then a
// missing version, then what finish found, then validation (the session
// id in layout l). Decoding goes
// on past a bad field, so the value holds whatever could be read.
func decodeVersioned[T interface{ ValidateIn(Layout) error }, W any](l Layout, enc Encoding, b []byte) (T, error) {
	var w W
	err := decode(enc, b, &w)
	var p *T
	var v *int
	if u, ok := any(&w).(unwrapper[T]); ok {
		p, v = u.unwrap()
	} else {
		p, v = unwrap[T](reflect.ValueOf(&w).Elem())
	}
	var ferr error
	if f, ok := any(&w).(finisher[T]); ok {
		ferr = f.finish(p)
	}
	var fe *FieldError
	switch {
	case v != nil && *v != Version && !(errors.As(err, &fe) && fe.Field == "v"):
		err = versionError(int64(*v))
	case err != nil:
	case v == nil:
		err = &FieldError{Field: "v", Problem: problemMissing}
	case ferr != nil:
		err = ferr
	default:
		err = (*p).ValidateIn(l)
	}
	return *p, err
}

// decode bounds b, then lets the library of enc decode it into dst, a
// pointer to a struct.
func decode(enc Encoding, b []byte, dst any) error {
	if len(b) > MaxPayloadSize {
		return tooLarge(len(b))
	}
	switch enc {
	case Msgpack:
		// A payload the fast path takes is a well-formed map, shallow and
		// without trailing bytes: the bounds check would pass it, so it
		// is not walked twice. Anything else is checked before the
		// library sees it.
		if f, ok := dst.(fastWire); ok && fastDecoding && f.fastMsgpack(b) {
			return nil
		}
		if err := checkMsgpack(b); err != nil {
			return err
		}
		if k := codeKind(b[0]); k != kindMap {
			return badPayload("msgpack: payload is %s, want map", k)
		}
		return decodeMsgpack(b, reflect.ValueOf(dst).Elem(), "")
	case JSON:
		if err := checkJSONDepth(b); err != nil {
			return err
		}
		return jsonError(json.Unmarshal(b, dst))
	}
	return badPayload("unknown encoding %v", enc)
}

// decodeMsgpack decodes the checked msgpack value b into v with the library.
// Where the library refuses b as a whole, a map is taken apart and each
// value decoded into its field on its own (an array likewise, element by
// element), recursively: a bad value spoils only its own field, keys that
// are not strings are skipped, and the first problem is returned as a
// FieldError with the path of its field (path names v).
func decodeMsgpack(b []byte, v reflect.Value, path string) error {
	// A value read again, after the struct holding it was refused as a
	// whole, starts empty: the library decodes into what an interface
	// already holds, and panics when that is not addressable.
	v.SetZero()
	d := msgpack.GetDecoder()
	d.Reset(bytes.NewReader(b))
	err := d.DecodeValue(v) // not Unmarshal: it bypasses registered decoders
	msgpack.PutDecoder(d)
	if err == nil {
		return nil
	}
	t, k := v.Type(), codeKind(b[0])
	into := v
	if t.Kind() == reflect.Pointer {
		into, t = reflect.New(t.Elem()), t.Elem()
		v.Set(into)
		into = into.Elem()
	}
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	switch {
	case k == kindMap && t.Kind() == reflect.Struct:
		var key []byte
		for item := range items(b) {
			if key == nil {
				key = item
				continue
			}
			if f, name, ok := fieldOf(into, key); ok {
				keep(decodeMsgpack(item, f, joinPath(path, name)))
			}
			key = nil
		}
		return first
	case k == kindArray && t.Kind() == reflect.Slice:
		into.Set(reflect.MakeSlice(t, 0, 0))
		for item := range items(b) {
			into.Set(reflect.Append(into, reflect.Zero(t.Elem())))
			i := into.Len() - 1
			keep(decodeMsgpack(item, into.Index(i), path+"["+strconv.Itoa(i)+"]"))
		}
		return first
	}
	v.SetZero()
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Field: joinPath(path, fe.Field), Problem: fe.Problem}
	}
	return wrongType(path, k.String(), typeName(t, Msgpack))
}

// fieldOf finds the field of struct v whose msgpack key is the msgpack
// string key.
func fieldOf(v reflect.Value, key []byte) (reflect.Value, string, bool) {
	h, _ := readHeader(key, 0)
	if h.kind != kindString {
		return reflect.Value{}, "", false
	}
	name := string(key[h.next:])
	for _, f := range reflect.VisibleFields(v.Type()) {
		tag, _, _ := strings.Cut(f.Tag.Get("msgpack"), ",")
		if tag == name && !f.Anonymous && f.IsExported() {
			return v.FieldByIndex(f.Index), name, true
		}
	}
	return reflect.Value{}, "", false
}

// jsonError turns an error of encoding/json into a bad payload error; a
// value of the wrong type becomes a FieldError with the path encoding/json
// gives (keys only, no list index).
func jsonError(err error) error {
	if err == nil || errors.Is(err, ErrBadPayload) {
		return err
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return badPayload("json: payload is %s, want object", te.Value)
		}
		return wrongType(jsonPath(te.Field), te.Value, typeName(te.Type, JSON))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return badPayload("json: %v at byte %d", se, se.Offset)
	}
	return badPayload("json: %v", err)
}

// jsonPath drops from a path of encoding/json the names of the payloads
// embedded in wire forms: wire keys start with a lower-case letter, Go type
// names do not.
func jsonPath(field string) string {
	var keys []string
	for key := range strings.SplitSeq(field, ".") {
		if key != "" && (key[0] < 'A' || key[0] > 'Z') {
			keys = append(keys, key)
		}
	}
	return strings.Join(keys, ".")
}

// typeName names the wire type expected for a Go type in enc.
func typeName(t reflect.Type, enc Encoding) string {
	if t == nil {
		return "value"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if enc == JSON {
			return "non-negative integer"
		}
		return "integer"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	}
	if enc == JSON {
		return "object"
	}
	return "map"
}
