package events

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"
)

// The payload types are decoded by the msgpack and JSON libraries from their
// struct tags. Where a payload needs more than its tags say, it is decoded
// through a wire form: the payload embedded, with the keys that need care
// declared beside it (they shadow the payload's own fields of the same key):
// "v" as a pointer, so that a missing version is told from 0; step and call
// ids as ID, which takes strings and integers; a skill call's args as
// pointers, so that a missing name is told from an empty one.

// ID is a step or call id as read from the wire: a string, or an integer,
// which becomes its decimal text (12 and "12" are the same id). Nil or null
// reads as "".
type ID string

// DecodeMsgpack implements msgpack.CustomDecoder.
func (id *ID) DecodeMsgpack(d *msgpack.Decoder) error {
	c, err := d.PeekCode()
	if err != nil {
		return err
	}
	switch k := codeKind(c); k {
	case kindString, kindBinary, kindNil:
		s, err := d.DecodeString()
		*id = ID(s)
		return err
	case kindInt, kindUint:
		n, err := d.DecodeInterfaceLoose() // int64 or uint64
		*id = ID(fmtInt(n))
		return err
	default:
		if err := d.Skip(); err != nil {
			return err
		}
		return wrongType("", k.String(), "string")
	}
}

// UnmarshalJSON implements json.Unmarshaler. A wrong type is reported as a
// *json.UnmarshalTypeError, to which encoding/json adds the field's path.
func (id *ID) UnmarshalJSON(b []byte) error {
	switch got := jsonKind(b); got {
	case "string":
		return json.Unmarshal(b, (*string)(id))
	case "null":
		return nil
	case "number":
		if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			*id = ID(strconv.FormatInt(n, 10))
			return nil
		}
		if n, err := strconv.ParseUint(string(b), 10, 64); err == nil {
			*id = ID(strconv.FormatUint(n, 10))
			return nil
		}
		got = "non-integer number " + quoteShort(string(b))
		fallthrough
	default:
		return &json.UnmarshalTypeError{Value: got, Type: reflect.TypeFor[string]()}
	}
}

func fmtInt(n any) string {
	if u, ok := n.(uint64); ok {
		return strconv.FormatUint(u, 10)
	}
	i, _ := n.(int64)
	return strconv.FormatInt(i, 10)
}

// jsonKind names the JSON type of the value text b.
func jsonKind(b []byte) string {
	switch b[0] {
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

// version returns the payload version read into v, 0 when missing.
func version(v *int) int {
	if v == nil {
		return 0
	}
	return *v
}

// The wire forms of the payloads with "v", with their ids.
type (
	preStepWire struct {
		V       *int `msgpack:"v" json:"v"`
		Step    ID   `msgpack:"step" json:"step"`
		PreStep `msgpack:",inline"`
	}
	catalogWire struct {
		V       *int `msgpack:"v" json:"v"`
		Step    ID   `msgpack:"step" json:"step"`
		Catalog `msgpack:",inline"`
	}
	toolResultWire struct {
		V          *int             `msgpack:"v" json:"v"`
		Call       ID               `msgpack:"call" json:"call"`
		Value      *resultValueWire `msgpack:"value" json:"value"`
		ToolResult `msgpack:",inline"`
	}
)

// resultValueWire reads a tool result's value, a skill call's or a
// search's: their keys differ, and "query" says which it is.
type resultValueWire struct {
	SkillValue `msgpack:",inline"`
	Query      *string `msgpack:"query" json:"query"`
	Offset     int     `msgpack:"offset" json:"offset"`
	Total      int     `msgpack:"total" json:"total"`
	Results    []Entry `msgpack:"results" json:"results"`
	Learned    string  `msgpack:"learned" json:"learned"`
	// LearnedTerms as SearchValue's.
	LearnedTerms []LearnedTerm `msgpack:"learnedTerms" json:"learnedTerms"`
}

// finish puts the value read where it belongs: Search when it is a
// search's, else Value.
func (w *toolResultWire) finish(r *ToolResult) error {
	r.Value, r.Search = nil, nil
	switch v := w.Value; {
	case v == nil:
	case v.Query != nil:
		results := v.Results
		if results == nil {
			results = []Entry{}
		}
		r.Search = &SearchValue{Query: *v.Query, Offset: v.Offset, Total: v.Total, Results: results, Learned: v.Learned, LearnedTerms: v.LearnedTerms}
	default:
		sv := v.SkillValue
		r.Value = &sv
	}
	return nil
}

// compactionWire reads a Compaction.
type compactionWire struct {
	V          *int `msgpack:"v" json:"v"`
	Compaction `msgpack:",inline"`
}

// skillInvocationWire reads a SkillInvocation.
type skillInvocationWire struct {
	V               *int `msgpack:"v" json:"v"`
	Step            ID   `msgpack:"step" json:"step"`
	SkillInvocation `msgpack:",inline"`
}

// catalogHeadWire reads a CatalogHead.
type catalogHeadWire struct {
	V           *int `msgpack:"v" json:"v"`
	CatalogHead `msgpack:",inline"`
}

// skillCallWire reads a SkillCall with its args as pointers.
type skillCallWire struct {
	V    *int `msgpack:"v" json:"v"`
	Call ID   `msgpack:"call" json:"call"`
	Args *struct {
		Name *string `msgpack:"name" json:"name"`
	} `msgpack:"args" json:"args"`
	SkillCall `msgpack:",inline"`
}

// skillSearchWire reads a SkillSearch with its args as a pointer, so that
// missing args are told from empty ones.
type skillSearchWire struct {
	V           *int        `msgpack:"v" json:"v"`
	Call        ID          `msgpack:"call" json:"call"`
	Args        *SearchArgs `msgpack:"args" json:"args"`
	SkillSearch `msgpack:",inline"`
}

// unwrap is unwrap[SkillSearch] without reflection.
func (w *skillSearchWire) unwrap() (*SkillSearch, *int) {
	w.SkillSearch.V, w.SkillSearch.Call = version(w.V), string(w.Call)
	return &w.SkillSearch, w.V
}

// finish reports missing args and passes each argument on as looseArg
// makes it: whether an argument is what the tool takes is the tool's to
// say, in its own words.
func (w *skillSearchWire) finish(s *SkillSearch) error {
	if w.Args == nil {
		return &FieldError{Field: "args", Problem: problemMissing}
	}
	s.Args = SearchArgs{Query: looseArg(w.Args.Query), Limit: looseArg(w.Args.Limit), Offset: looseArg(w.Args.Offset)}
	return nil
}

// looseArg is a tool argument as decoded (by either library, or the fast
// path), made one of the few forms SearchArgs documents: every integer an
// int64 (a uint64 above its range), every other number a float64, a binary string
// a string, a number with no fractional part an integer, and any other
// value an empty []any or map[string]any, which says its type and holds
// nothing.
func looseArg(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int64:
		return x
	case float64:
		return looseFloat(x)
	case []byte:
		return string(x)
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint:
		return looseUint(uint64(x))
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		return looseUint(x)
	case float32:
		return looseFloat(float64(x))
	case []any:
		return []any{}
	}
	return map[string]any{}
}

// looseFloat is a number with no fractional part in the int64 range as
// an int64 (JSON has no other integers), any other as it is.
func looseFloat(f float64) any {
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int64(f)
	}
	return f
}

func looseUint(n uint64) any {
	if n <= math.MaxInt64 {
		return int64(n)
	}
	return n
}

// decisionWire reads a Decision and its catalog.
type decisionWire struct {
	V        *int         `msgpack:"v" json:"v"`
	Step     ID           `msgpack:"step" json:"step"`
	Catalog  *catalogWire `msgpack:"catalog" json:"catalog"`
	Decision `msgpack:",inline"`
}

// unwrap copies what the wire form w (a struct) read beside its payload, its
// embedded field of type T, into the payload: "v" (0 when missing) and the
// ids as text. It returns the payload and "v" as read (nil when missing).
func unwrap[T any](w reflect.Value) (*T, *int) {
	var v *int
	p := w.FieldByName(reflect.TypeFor[T]().Name())
	for i := range w.NumField() {
		switch x := w.Field(i).Interface().(type) {
		case *int:
			v = x
			p.FieldByName("V").SetInt(int64(version(x)))
		case ID:
			p.FieldByName(w.Type().Field(i).Name).SetString(string(x))
		}
	}
	return p.Addr().Interface().(*T), v
}

// unwrap is unwrap[PreStep] without reflection.
func (w *preStepWire) unwrap() (*PreStep, *int) {
	w.PreStep.V, w.PreStep.Step = version(w.V), string(w.Step)
	return &w.PreStep, w.V
}

// unwrap is unwrap[SkillCall] without reflection.
func (w *skillCallWire) unwrap() (*SkillCall, *int) {
	w.SkillCall.V, w.SkillCall.Call = version(w.V), string(w.Call)
	return &w.SkillCall, w.V
}

// finish reports a missing args or args.name; an empty name is valid here
// (the skill tool answers it with its invalid-name error).
func (w *skillCallWire) finish(c *SkillCall) error {
	switch {
	case w.Args == nil:
		return &FieldError{Field: "args", Problem: problemMissing}
	case w.Args.Name == nil:
		return &FieldError{Field: "args.name", Problem: problemMissing}
	}
	c.Args.Name = *w.Args.Name
	return nil
}

// finish unwraps the catalog.
func (w *decisionWire) finish(x *Decision) error {
	if w.Catalog != nil {
		x.Catalog, _ = unwrap[Catalog](reflect.ValueOf(w.Catalog).Elem())
	}
	return nil
}

// The msgpack library is lax where the protocol is strict: it converts
// between signed and unsigned integers silently (-1 read into a uint64 is
// 2^64-1) and reads nil as an empty map. The decoders registered here, for
// the integer types of the payloads and for the elements of their lists of
// maps, refuse both with a FieldError (its path is added by retry).
func init() {
	for _, v := range []any{int(0), int64(0), uint64(0)} {
		msgpack.Register(v, nil, decodeInteger)
	}
	msgpack.Register(Tool{}, nil, refuseNil[toolFields])
	msgpack.Register(Entry{}, nil, decodeEntry)
}

// entryKey reads a map key of an entry into buf without allocating; a key
// longer than buf is read and given back cut to buf's length, which no
// field's name is.
func entryKey(d *msgpack.Decoder, buf []byte) ([]byte, error) {
	n, err := d.DecodeBytesLen()
	if err != nil || n <= 0 {
		return nil, err
	}
	for rest := n; rest > 0; {
		k := min(rest, len(buf))
		if err := d.ReadFull(buf[:k]); err != nil {
			return nil, err
		}
		rest -= k
	}
	if n > len(buf) {
		return buf, nil
	}
	return buf[:n], nil
}

// decodeEntry reads a catalog entry. A catalog lists up to thousands of
// them, so a map is read key by key here, as the library's struct decoder
// would read it but without its reflection per field; anything else (nil,
// the array form of a struct, a wrong type) goes to refuseNil, which
// refuses or reads it as before.
func decodeEntry(d *msgpack.Decoder, v reflect.Value) error {
	if c, err := d.PeekCode(); err != nil || codeKind(c) != kindMap {
		return refuseNil[entryFields](d, v)
	}
	n, err := d.DecodeMapLen()
	if err != nil {
		return err
	}
	e := v.Addr().Interface().(*Entry)
	var buf [16]byte
	for range n {
		key, err := entryKey(d, buf[:])
		if err != nil {
			return err
		}
		switch string(key) {
		case "name":
			e.Name, err = d.DecodeString()
		case "description":
			e.Description, err = d.DecodeString()
		default:
			err = d.Skip()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// toolFields and entryFields are Tool and Entry without the registered
// decoder, for the library's own struct decoding.
type (
	toolFields  Tool
	entryFields Entry
)

func decodeInteger(d *msgpack.Decoder, v reflect.Value) error {
	c, err := d.PeekCode()
	if err != nil {
		return err
	}
	k := codeKind(c)
	if k != kindInt && k != kindUint && k != kindNil {
		if err := d.Skip(); err != nil {
			return err
		}
		return wrongType("", k.String(), "integer")
	}
	n, err := d.DecodeInterfaceLoose() // nil, int64 or uint64
	switch n := n.(type) {
	case nil:
		v.SetZero()
	case int64:
		if !v.CanUint() {
			v.SetInt(n)
		} else if n >= 0 {
			v.SetUint(uint64(n))
		} else {
			return &FieldError{Problem: "negative: " + strconv.FormatInt(n, 10)}
		}
	case uint64:
		if v.CanUint() {
			v.SetUint(n)
		} else if n <= math.MaxInt64 {
			v.SetInt(int64(n))
		} else {
			return &FieldError{Problem: "out of range: " + strconv.FormatUint(n, 10)}
		}
	}
	return err
}

// refuseNil decodes a map into v through the type P, which is v's type
// without the registered decoder, and refuses nil.
func refuseNil[P any](d *msgpack.Decoder, v reflect.Value) error {
	if c, err := d.PeekCode(); err == nil && codeKind(c) == kindNil {
		_ = d.Skip()
		return wrongType("", "nil", "map")
	}
	return d.DecodeValue(v.Addr().Convert(reflect.TypeFor[*P]()).Elem())
}
