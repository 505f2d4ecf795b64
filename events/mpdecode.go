package events

import (
	"bytes"
	"math"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"
)

// This file holds the msgpack decoders of the payload types. msgpack.Unmarshal
// calls them (they implement msgpack.CustomDecoder) once checkMsgpack has
// bounded the input. They read map keys in any order, skip unknown keys, take
// nil as "absent". A value of the wrong type is skipped and decoding goes on,
// so that every decoder consumes exactly its value and the result holds every
// field that could be read; the first problem is returned as a FieldError
// naming the field's path. Errors of the msgpack reader itself (not expected
// once checkMsgpack passed) stop decoding.

var (
	_ msgpack.CustomDecoder = (*PreStep)(nil)
	_ msgpack.CustomDecoder = (*SkillCall)(nil)
	_ msgpack.CustomDecoder = (*Compaction)(nil)
	_ msgpack.CustomDecoder = (*Catalog)(nil)
	_ msgpack.CustomDecoder = (*ToolResult)(nil)
	_ msgpack.CustomDecoder = (*Decision)(nil)
	_ msgpack.CustomDecoder = (*ToolDefinition)(nil)
)

func peekKind(d *msgpack.Decoder) (valueKind, error) {
	c, err := d.PeekCode()
	if err != nil {
		return kindInvalid, badPayload("msgpack: %v", err)
	}
	return codeKind(c), nil
}

// fatal wraps an error of the msgpack reader itself (not expected after
// checkMsgpack) as a bad payload error about field. It is not a FieldError:
// decoding cannot go on after it.
func fatal(field string, err error) error {
	return badPayload("msgpack: field %q: %v", field, err)
}

// mismatch skips the value under the reader and reports its wrong type.
func mismatch(d *msgpack.Decoder, field string, got valueKind, want string) error {
	if err := d.Skip(); err != nil {
		return fatal(field, err)
	}
	return wrongType(field, got.String(), want)
}

// isFieldError reports whether err is a FieldError, after which decoding
// can go on.
func isFieldError(err error) bool {
	_, ok := err.(*FieldError)
	return ok
}

// firstError keeps the first FieldError in *dst and reports whether decoding
// can go on.
func firstError(dst *error, err error) bool {
	if err == nil {
		return true
	}
	if !isFieldError(err) {
		*dst = err
		return false
	}
	if *dst == nil {
		*dst = err
	}
	return true
}

// mpString reads a string field; msgpack bin is accepted as a string too, nil
// as "".
func mpString(d *msgpack.Decoder, field string) (string, error) {
	k, err := peekKind(d)
	if err != nil {
		return "", err
	}
	switch k {
	case kindString, kindBinary, kindNil:
		s, err := d.DecodeString()
		if err != nil {
			return "", fatal(field, err)
		}
		return s, nil
	}
	return "", mismatch(d, field, k, "string")
}

// mpID reads a step or call id: a string, or an integer which becomes its
// decimal text.
func mpID(d *msgpack.Decoder, field string) (string, error) {
	k, err := peekKind(d)
	if err != nil {
		return "", err
	}
	switch k {
	case kindInt:
		n, err := d.DecodeInt64()
		if err != nil {
			return "", fatal(field, err)
		}
		return strconv.FormatInt(n, 10), nil
	case kindUint:
		n, err := d.DecodeUint64()
		if err != nil {
			return "", fatal(field, err)
		}
		return strconv.FormatUint(n, 10), nil
	case kindString, kindBinary, kindNil:
		return mpString(d, field)
	}
	return "", mismatch(d, field, k, "string")
}

// mpUint reads a non-negative integer; nil reads as 0.
func mpUint(d *msgpack.Decoder, field string) (uint64, error) {
	k, err := peekKind(d)
	if err != nil {
		return 0, err
	}
	switch k {
	case kindNil:
		return 0, d.DecodeNil()
	case kindUint:
		n, err := d.DecodeUint64()
		if err != nil {
			return 0, fatal(field, err)
		}
		return n, nil
	case kindInt:
		n, err := d.DecodeInt64()
		if err != nil {
			return 0, fatal(field, err)
		}
		if n < 0 {
			return 0, &FieldError{Field: field, Problem: "negative: " + strconv.FormatInt(n, 10)}
		}
		return uint64(n), nil
	}
	return 0, mismatch(d, field, k, "integer")
}

// mpInt reads a signed integer; nil reads as 0.
func mpInt(d *msgpack.Decoder, field string) (int64, error) {
	k, err := peekKind(d)
	if err != nil {
		return 0, err
	}
	switch k {
	case kindNil:
		return 0, d.DecodeNil()
	case kindUint:
		n, err := d.DecodeUint64()
		if err != nil {
			return 0, fatal(field, err)
		}
		if n > math.MaxInt64 {
			return 0, &FieldError{Field: field, Problem: "out of range: " + strconv.FormatUint(n, 10)}
		}
		return int64(n), nil
	case kindInt:
		n, err := d.DecodeInt64()
		if err != nil {
			return 0, fatal(field, err)
		}
		return n, nil
	}
	return 0, mismatch(d, field, k, "integer")
}

// mpBool reads a bool; nil reads as false.
func mpBool(d *msgpack.Decoder, field string) (bool, error) {
	k, err := peekKind(d)
	if err != nil {
		return false, err
	}
	switch k {
	case kindNil:
		return false, d.DecodeNil()
	case kindBool:
		b, err := d.DecodeBool()
		if err != nil {
			return false, fatal(field, err)
		}
		return b, nil
	}
	return false, mismatch(d, field, k, "bool")
}

// mpLen reads the header of a container of kind (kindArray or kindMap);
// nil gives -1.
func mpLen(d *msgpack.Decoder, field string, kind valueKind) (int, error) {
	k, err := peekKind(d)
	if err != nil {
		return 0, err
	}
	if k != kindNil && k != kind {
		return 0, mismatch(d, field, k, kind.String())
	}
	read := d.DecodeArrayLen
	if kind == kindMap {
		read = d.DecodeMapLen
	}
	n, err := read()
	if err != nil {
		return 0, fatal(field, err)
	}
	return n, nil
}

// mpKey reads a map key. A key that is not a string is skipped with its
// value (ok false): no payload uses one.
func mpKey(d *msgpack.Decoder) (key string, ok bool, err error) {
	k, err := peekKind(d)
	if err != nil {
		return "", false, err
	}
	if k != kindString {
		if err := mpSkip(d); err != nil {
			return "", false, err
		}
		return "", false, mpSkip(d)
	}
	s, err := d.DecodeString()
	if err != nil {
		return "", false, badPayload("msgpack: %v", err)
	}
	return s, true, nil
}

func mpSkip(d *msgpack.Decoder) error {
	if err := d.Skip(); err != nil {
		return badPayload("msgpack: %v", err)
	}
	return nil
}

// mpFields reads a map, calling field for each string key with the decoder
// positioned on the value; field must consume the value (mpSkip for keys it
// does not know). A nil map reads as an empty one.
func mpFields(d *msgpack.Decoder, field func(key string) error) error {
	n, err := mpLen(d, "", kindMap)
	if err != nil {
		return err
	}
	var ferr error
	for ; n > 0; n-- {
		key, ok, err := mpKey(d)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if !firstError(&ferr, field(key)) {
			return ferr
		}
	}
	return ferr
}

// mpStruct decodes a nested map into v, prefixing field errors with path.
// It reports whether the value was present (not nil).
func mpStruct(d *msgpack.Decoder, path string, v msgpack.CustomDecoder) (present bool, err error) {
	k, err := peekKind(d)
	if err != nil {
		return false, err
	}
	if k == kindNil {
		return false, d.DecodeNil()
	}
	if err := v.DecodeMsgpack(d); err != nil {
		return true, prefixField(path, err)
	}
	return true, nil
}

// decoderPtr is *T decoding itself from msgpack.
type decoderPtr[T any] interface {
	*T
	msgpack.CustomDecoder
}

// mpOptional decodes the optional nested map under key into a new T and
// sets *dst to it; *dst stays nil when the value is nil or has a field
// error.
func mpOptional[T any, PT decoderPtr[T]](d *msgpack.Decoder, key string, dst **T) error {
	v := new(T)
	present, err := mpStruct(d, key, PT(v))
	if present && err == nil {
		*dst = v
	}
	return err
}

// mpArray reads the array field into a new slice, calling elem for each
// element with the reader on it; field errors of elements get the path
// field[i]. nil leaves *dst nil.
func mpArray[T any](d *msgpack.Decoder, field string, dst *[]T, elem func(*T) error) error {
	n, err := mpLen(d, field, kindArray)
	if err != nil || n < 0 {
		return err
	}
	*dst = make([]T, n)
	for i := range *dst {
		if !firstError(&err, prefixField(field, prefixIndex(elem(&(*dst)[i]), i))) {
			return err
		}
	}
	return err
}

// mpMaps reads the array field whose elements are maps.
func mpMaps[T any, PT decoderPtr[T]](d *msgpack.Decoder, field string, dst *[]T) error {
	return mpArray(d, field, dst, func(v *T) error {
		present, err := mpStruct(d, "", PT(v))
		if err == nil && !present {
			err = wrongType("", "nil", "map")
		}
		return err
	})
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (t *Tool) DecodeMsgpack(d *msgpack.Decoder) error {
	*t = Tool{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "name":
			t.Name, err = mpString(d, key)
		case "owner":
			t.Owner, err = mpString(d, key)
		default:
			err = mpSkip(d)
		}
		return err
	})
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (p *PreStep) DecodeMsgpack(d *msgpack.Decoder) error {
	*p = PreStep{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "v":
			p.V, err = mpVersion(d)
		case "session":
			p.Session, err = mpString(d, key)
		case "step":
			p.Step, err = mpID(d, key)
		case "cwd":
			p.Cwd, err = mpString(d, key)
		case "project":
			p.Project, err = mpString(d, key)
		case "resourceDir":
			p.ResourceDir, err = mpString(d, key)
		case "deadlineMs":
			p.DeadlineMs, err = mpInt(d, key)
		case "tools":
			err = mpMaps(d, key, &p.Tools)
		default:
			err = mpSkip(d)
		}
		return err
	})
}

// mpVersion reads "v" into an int; Validate checks its value.
func mpVersion(d *msgpack.Decoder) (int, error) {
	v, err := mpInt(d, "v")
	if err != nil {
		return 0, err
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, versionError(v)
	}
	return int(v), nil
}

// prefixIndex puts "[i]" in front of the field of a FieldError.
func prefixIndex(err error, i int) error {
	if fe, ok := err.(*FieldError); ok {
		return &FieldError{Field: joinPath("["+strconv.Itoa(i)+"]", fe.Field), Problem: fe.Problem}
	}
	return err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (a *SkillArgs) DecodeMsgpack(d *msgpack.Decoder) error {
	*a = SkillArgs{}
	seen := false
	err := mpFields(d, func(key string) error {
		if key != "name" {
			return mpSkip(d)
		}
		k, err := peekKind(d)
		if err != nil {
			return err
		}
		if seen = k != kindNil; !seen {
			return d.DecodeNil()
		}
		a.Name, err = mpString(d, key)
		return err
	})
	if err == nil && !seen {
		err = &FieldError{Field: "name", Problem: problemMissing}
	}
	return err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (c *SkillCall) DecodeMsgpack(d *msgpack.Decoder) error {
	*c = SkillCall{}
	args := false
	err := mpFields(d, func(key string) (err error) {
		switch key {
		case "v":
			c.V, err = mpVersion(d)
		case "session":
			c.Session, err = mpString(d, key)
		case "call":
			c.Call, err = mpID(d, key)
		case "cwd":
			c.Cwd, err = mpString(d, key)
		case "project":
			c.Project, err = mpString(d, key)
		case "resourceDir":
			c.ResourceDir, err = mpString(d, key)
		case "deadlineMs":
			c.DeadlineMs, err = mpInt(d, key)
		case "args":
			args, err = mpStruct(d, key, &c.Args)
		default:
			err = mpSkip(d)
		}
		return err
	})
	if err == nil && !args {
		err = &FieldError{Field: "args", Problem: problemMissing}
	}
	return err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (c *Compaction) DecodeMsgpack(d *msgpack.Decoder) error {
	*c = Compaction{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "v":
			c.V, err = mpVersion(d)
		case "session":
			c.Session, err = mpString(d, key)
		case "retainFrom":
			c.RetainFrom, err = mpUint(d, key)
		case "keep":
			err = mpArray(d, key, &c.Keep, func(k *uint64) (err error) {
				*k, err = mpUint(d, "")
				return err
			})
		default:
			err = mpSkip(d)
		}
		return err
	})
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (e *Entry) DecodeMsgpack(d *msgpack.Decoder) error {
	*e = Entry{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "name":
			e.Name, err = mpString(d, key)
		case "description":
			e.Description, err = mpString(d, key)
		default:
			err = mpSkip(d)
		}
		return err
	})
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (s *CatalogSource) DecodeMsgpack(d *msgpack.Decoder) error {
	*s = CatalogSource{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "kind":
			s.Kind, err = mpString(d, key)
		case "producer":
			s.Producer, err = mpString(d, key)
		case "update":
			s.Update, err = mpString(d, key)
		case "digest":
			s.Digest, err = mpString(d, key)
		case "entries":
			err = mpMaps(d, key, &s.Entries)
		case "omitted":
			var n int64
			n, err = mpInt(d, key)
			s.Omitted = int(n)
		case "view":
			err = mpOptional(d, key, &s.View)
		default:
			err = mpSkip(d)
		}
		return err
	})
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (c *Catalog) DecodeMsgpack(d *msgpack.Decoder) error {
	*c = Catalog{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "v":
			c.V, err = mpVersion(d)
		case "session":
			c.Session, err = mpString(d, key)
		case "step":
			c.Step, err = mpID(d, key)
		case "id":
			c.ID, err = mpString(d, key)
		case "role":
			c.Role, err = mpString(d, key)
		case "text":
			c.Text, err = mpString(d, key)
		case "source":
			_, err = mpStruct(d, key, &c.Source)
		default:
			err = mpSkip(d)
		}
		return err
	})
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (e *ErrorInfo) DecodeMsgpack(d *msgpack.Decoder) error {
	*e = ErrorInfo{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "code":
			e.Code, err = mpString(d, key)
		case "message":
			e.Message, err = mpString(d, key)
		default:
			err = mpSkip(d)
		}
		return err
	})
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (x *Decision) DecodeMsgpack(d *msgpack.Decoder) error {
	*x = Decision{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "v":
			x.V, err = mpVersion(d)
		case "session":
			x.Session, err = mpString(d, key)
		case "step":
			x.Step, err = mpID(d, key)
		case "triggerSeq":
			x.TriggerSeq, err = mpUint(d, key)
		case "outcome":
			x.Outcome, err = mpString(d, key)
		case "catalog":
			err = mpOptional(d, key, &x.Catalog)
		case "reason":
			x.Reason, err = mpString(d, key)
		case "error":
			err = mpOptional(d, key, &x.Error)
		default:
			err = mpSkip(d)
		}
		return err
	})
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (r *ResourceBase) DecodeMsgpack(d *msgpack.Decoder) error {
	*r = ResourceBase{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "kind":
			r.Kind, err = mpString(d, key)
		case "path":
			r.Path, err = mpString(d, key)
		case "url":
			r.URL, err = mpString(d, key)
		case "description":
			r.Description, err = mpString(d, key)
		default:
			err = mpSkip(d)
		}
		return err
	})
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (s *SkillValue) DecodeMsgpack(d *msgpack.Decoder) error {
	*s = SkillValue{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "name":
			s.Name, err = mpString(d, key)
		case "provider":
			s.Provider, err = mpString(d, key)
		case "content":
			s.Content, err = mpString(d, key)
		case "resourceBase":
			err = mpOptional(d, key, &s.ResourceBase)
		case "digest":
			s.Digest, err = mpString(d, key)
		case "revision":
			s.Revision, err = mpUint(d, key)
		case "truncated":
			err = mpOptional(d, key, &s.Truncated)
		default:
			err = mpSkip(d)
		}
		return err
	})
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (r *ToolResult) DecodeMsgpack(d *msgpack.Decoder) error {
	*r = ToolResult{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "v":
			r.V, err = mpVersion(d)
		case "session":
			r.Session, err = mpString(d, key)
		case "call":
			r.Call, err = mpID(d, key)
		case "triggerSeq":
			r.TriggerSeq, err = mpUint(d, key)
		case "isError":
			r.IsError, err = mpBool(d, key)
		case "text":
			r.Text, err = mpString(d, key)
		case "value":
			err = mpOptional(d, key, &r.Value)
		case "error":
			err = mpOptional(d, key, &r.Error)
		default:
			err = mpSkip(d)
		}
		return err
	})
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (t *ToolDefinition) DecodeMsgpack(d *msgpack.Decoder) error {
	*t = ToolDefinition{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "name":
			t.Name, err = mpString(d, key)
		case "description":
			t.Description, err = mpString(d, key)
		case "parameters":
			// Take the value's bytes first so that a value without a JSON
			// form still leaves the reader at the next key.
			raw, rerr := d.DecodeRaw()
			if rerr != nil {
				return fatal(key, rerr)
			}
			if err = t.Parameters.DecodeMsgpack(msgpack.NewDecoder(bytes.NewReader(raw))); err != nil {
				t.Parameters = nil
				err = &FieldError{Field: key, Problem: err.Error()}
			}
		default:
			err = mpSkip(d)
		}
		return err
	})
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *View) DecodeMsgpack(d *msgpack.Decoder) error {
	*v = View{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "revision":
			v.Revision, err = mpUint(d, key)
		case "instance":
			v.Instance, err = mpString(d, key)
		default:
			err = mpSkip(d)
		}
		return err
	})
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (t *Truncated) DecodeMsgpack(d *msgpack.Decoder) error {
	*t = Truncated{}
	return mpFields(d, func(key string) (err error) {
		switch key {
		case "kept":
			t.Kept, err = mpInt(d, key)
		case "total":
			t.Total, err = mpInt(d, key)
		default:
			err = mpSkip(d)
		}
		return err
	})
}
