package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Lists the protocol requires (a pre-step's tools, a catalog's entries) are
// written as empty lists, never as nil/null, when the Go slice is nil: a
// worker in another language may iterate them without checking.

var (
	_ msgpack.CustomEncoder = PreStep{}
	_ json.Marshaler        = PreStep{}
	_ msgpack.CustomEncoder = CatalogSource{}
	_ json.Marshaler        = CatalogSource{}
	_ msgpack.CustomEncoder = ToolResult{}
	_ json.Marshaler        = ToolResult{}
	_ msgpack.CustomEncoder = SearchValue{}
	_ json.Marshaler        = SearchValue{}
)

// searchResultForm is a ToolResult whose value is a search's: the same
// keys, with Search as "value".
type searchResultForm struct {
	V          int          `msgpack:"v" json:"v"`
	Session    string       `msgpack:"session" json:"session"`
	Call       string       `msgpack:"call" json:"call"`
	TriggerSeq uint64       `msgpack:"triggerSeq" json:"triggerSeq"`
	IsError    bool         `msgpack:"isError" json:"isError"`
	Text       string       `msgpack:"text" json:"text"`
	Value      *SearchValue `msgpack:"value,omitempty" json:"value,omitempty"`
	Error      *ErrorInfo   `msgpack:"error,omitempty" json:"error,omitempty"`
}

// form is what encodes r: r itself, without its methods, or for a search's
// result the form that writes Search as "value".
func (r ToolResult) form() any {
	type plain ToolResult
	if r.Search == nil {
		return plain(r)
	}
	return searchResultForm{V: r.V, Session: r.Session, Call: r.Call, TriggerSeq: r.TriggerSeq, IsError: r.IsError,
		Text: r.Text, Value: r.Search, Error: r.Error}
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (r ToolResult) EncodeMsgpack(e *msgpack.Encoder) error { return e.Encode(r.form()) }

// MarshalJSON implements json.Marshaler.
func (r ToolResult) MarshalJSON() ([]byte, error) { return marshalJSON(r.form()) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v SearchValue) EncodeMsgpack(e *msgpack.Encoder) error {
	type plain SearchValue
	if v.Results == nil {
		v.Results = []Entry{}
	}
	return e.Encode(plain(v))
}

// MarshalJSON implements json.Marshaler.
func (v SearchValue) MarshalJSON() ([]byte, error) {
	type plain SearchValue
	if v.Results == nil {
		v.Results = []Entry{}
	}
	return marshalJSON(plain(v))
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (p PreStep) EncodeMsgpack(e *msgpack.Encoder) error {
	type plain PreStep
	if p.Tools == nil {
		p.Tools = []Tool{}
	}
	return e.Encode(plain(p))
}

// MarshalJSON implements json.Marshaler.
func (p PreStep) MarshalJSON() ([]byte, error) {
	type plain PreStep
	if p.Tools == nil {
		p.Tools = []Tool{}
	}
	return marshalJSON(plain(p))
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (s CatalogSource) EncodeMsgpack(e *msgpack.Encoder) error {
	type plain CatalogSource
	if s.Update == UpdateChanges {
		return e.Encode(changesSourceOf(s))
	}
	if s.Entries == nil {
		s.Entries = []Entry{}
	}
	if s.Base == 0 && len(s.Changes) == 0 && s.Count == 0 {
		return s.encodeFull(e)
	}
	return e.Encode(plain(s))
}

// encodeFull writes a full catalog's source (no Base, Changes or Count)
// field by field, as the library writes the struct: a map of its fields
// in order, omitted, view and options left out when empty. A catalog of thousands
// of entries is written once per view, and the library's reflection cost
// milliseconds of it (FuzzCatalogSourceEncoding holds the two equal).
func (s CatalogSource) encodeFull(e *msgpack.Encoder) error {
	n := 5
	if s.Omitted != 0 {
		n++
	}
	if len(s.Origins) > 0 {
		n++
	}
	if len(s.Revoked) > 0 {
		n++
	}
	if s.View != nil {
		n++
	}
	if s.Options != nil {
		n++
	}
	err := e.EncodeMapLen(n)
	if err == nil {
		err = encodeStrings(e, "kind", s.Kind, "producer", s.Producer, "update", s.Update, "entries")
	}
	if err == nil {
		err = e.EncodeArrayLen(len(s.Entries))
	}
	for i := 0; err == nil && i < len(s.Entries); i++ {
		if err = e.EncodeMapLen(2); err == nil {
			err = encodeStrings(e, "name", s.Entries[i].Name, "description", s.Entries[i].Description)
		}
	}
	if err == nil {
		err = encodeStrings(e, "digest", s.Digest)
	}
	if err == nil && s.Omitted != 0 {
		if err = e.EncodeString("omitted"); err == nil {
			err = e.EncodeInt(int64(s.Omitted))
		}
	}
	if err == nil && len(s.Origins) > 0 {
		if err = e.EncodeString("origins"); err == nil {
			err = e.Encode(s.Origins)
		}
	}
	if err == nil && len(s.Revoked) > 0 {
		if err = e.EncodeString("revoked"); err == nil {
			err = e.Encode(s.Revoked)
		}
	}
	if err == nil && s.View != nil {
		if err = e.EncodeString("view"); err == nil {
			err = e.Encode(s.View)
		}
	}
	if err == nil && s.Options != nil {
		if err = e.EncodeString("options"); err == nil {
			err = e.Encode(s.Options)
		}
	}
	return err
}

// encodeStrings writes each of ss as a msgpack string.
func encodeStrings(e *msgpack.Encoder, ss ...string) error {
	for _, s := range ss {
		if err := e.EncodeString(s); err != nil {
			return err
		}
	}
	return nil
}

// MarshalJSON implements json.Marshaler.
func (s CatalogSource) MarshalJSON() ([]byte, error) {
	type plain CatalogSource
	if s.Update == UpdateChanges {
		return marshalJSON(changesSourceOf(s))
	}
	if s.Entries == nil {
		s.Entries = []Entry{}
	}
	return marshalJSON(plain(s))
}

// changesSource is how a change list's source is written: no entries,
// and base, changes and count always.
type changesSource struct {
	Kind     string          `msgpack:"kind" json:"kind"`
	Producer string          `msgpack:"producer" json:"producer"`
	Update   string          `msgpack:"update" json:"update"`
	Base     uint64          `msgpack:"base" json:"base"`
	Changes  []Change        `msgpack:"changes" json:"changes"`
	Count    int             `msgpack:"count" json:"count"`
	Digest   string          `msgpack:"digest" json:"digest"`
	Omitted  int             `msgpack:"omitted,omitempty" json:"omitted,omitempty"`
	Origins  []EntryOrigin   `msgpack:"origins,omitempty" json:"origins,omitempty"`
	Revoked  []string        `msgpack:"revoked,omitempty" json:"revoked,omitempty"`
	View     *View           `msgpack:"view,omitempty" json:"view,omitempty"`
	Options  *CatalogOptions `msgpack:"options,omitempty" json:"options,omitempty"`
}

func changesSourceOf(s CatalogSource) changesSource {
	if s.Changes == nil {
		s.Changes = []Change{}
	}
	return changesSource{Kind: s.Kind, Producer: s.Producer, Update: s.Update, Base: s.Base, Changes: s.Changes,
		Count: s.Count, Digest: s.Digest, Omitted: s.Omitted, Origins: s.Origins, Revoked: s.Revoked, View: s.View, Options: s.Options}
}

// marshalJSON is json.Marshal without HTML escaping: payload text is full of
// '<', '>' and '&', which need no escaping in JSON.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// EncodeDecision encodes d in enc as Encode does. When enc is msgpack and
// catalog holds the msgpack encoding of *d.Catalog (the bytes of the catalog
// just appended), those bytes go into the answer as they are instead of the
// catalog being encoded a second time; the result is byte for byte what
// Encode gives. A decision without a catalog (and catalog nil) is written
// field by field too, without the library's reflection.
func EncodeDecision(enc Encoding, d Decision, catalog []byte) ([]byte, error) {
	return AppendDecision(nil, enc, d, catalog)
}

// AppendDecision is EncodeDecision writing into dst's spare capacity, as
// AppendEncode does.
func AppendDecision(dst []byte, enc Encoding, d Decision, catalog []byte) ([]byte, error) {
	return AppendDecisionList(dst, enc, d, catalog, nil)
}

// AppendDecisionList is AppendDecision that also takes the msgpack
// encoding of *d.CurrentList (EncodeCurrentList), which goes into the
// answer as it is: a current list of a thousand entries is the same for
// every unchanged step of every session that has it, so it is encoded once.
// Without those bytes a decision with a current list is encoded whole.
func AppendDecisionList(dst []byte, enc Encoding, d Decision, catalog, currentList []byte) ([]byte, error) {
	if enc != Msgpack || (d.Catalog == nil) != (catalog == nil) || (d.CurrentList == nil) != (currentList == nil) {
		return AppendEncode(dst, enc, d)
	}
	if len(d.Invocations) > 0 || len(d.Ignored) > 0 || len(d.Diagnostics) > 0 {
		return AppendEncode(dst, enc, d) // the fields below do not cover them
	}
	// The map the struct encoder writes for a Decision: fields in order,
	// the omitempty ones only when set.
	n := 5
	if catalog != nil {
		n++
	}
	if d.Error != nil {
		n++
	}
	if d.Reason != "" {
		n++
	}
	if d.CatalogSeq != 0 {
		n++
	}
	if len(d.CatalogSeqs) > 0 {
		n++
	}
	if currentList != nil {
		n++
	}
	buf := bytes.NewBuffer(dst[:0])
	buf.Grow(len(catalog) + len(currentList) + 256)
	e := msgpack.GetEncoder()
	defer msgpack.PutEncoder(e)
	e.Reset(buf)
	e.UseCompactInts(true)
	type field struct {
		key string
		val any
	}
	fields := make([]field, 0, 11)
	fields = append(fields, field{"v", d.V}, field{"session", d.Session}, field{"step", d.Step},
		field{"triggerSeq", d.TriggerSeq}, field{"outcome", d.Outcome})
	if catalog != nil {
		fields = append(fields, field{"catalog", msgpack.RawMessage(catalog)})
	}
	if d.Error != nil {
		fields = append(fields, field{"error", d.Error})
	}
	if d.Reason != "" {
		fields = append(fields, field{"reason", d.Reason})
	}
	if d.CatalogSeq != 0 {
		fields = append(fields, field{"catalogSeq", d.CatalogSeq})
	}
	if len(d.CatalogSeqs) > 0 {
		fields = append(fields, field{"catalogSeqs", d.CatalogSeqs})
	}
	if currentList != nil {
		fields = append(fields, field{"currentList", msgpack.RawMessage(currentList)})
	}
	err := e.EncodeMapLen(n)
	for _, f := range fields {
		if err == nil {
			err = e.EncodeString(f.key)
		}
		if err == nil {
			err = e.Encode(f.val)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("encode %T as msgpack: %w", d, err)
	}
	if buf.Len() > MaxPayloadSize {
		return nil, fmt.Errorf("encode %T: %w", d, tooLarge(buf.Len()))
	}
	return buf.Bytes(), nil
}

// EncodeCurrentList is the msgpack encoding of l as a Decision's
// currentList, for AppendDecisionList.
func EncodeCurrentList(l CurrentList) ([]byte, error) {
	return Encode(Msgpack, l)
}

// CatalogBody is the part of a catalog record that every session given the
// same catalog shares: its text and its source, encoded in msgpack once.
// A processor appending the same catalog to many sessions keeps one and
// encodes each record with Encode, which writes the few per-session fields
// and then these bytes: byte for byte what Encode(Msgpack, Catalog(...))
// gives.
type CatalogBody struct {
	text   string
	source CatalogSource
	raw    []byte // "text", text, "source", source: two map pairs
	// summary and header are its UsageSummary, made once.
	summaryOnce sync.Once
	summary     UsageSummary
	header      string
}

// NewCatalogBody encodes the shared part of a catalog record.
func NewCatalogBody(text string, source CatalogSource) (*CatalogBody, error) {
	var buf bytes.Buffer
	probe := Catalog{Text: text, Source: source}
	buf.Grow(catalogSize(&probe) + 64)
	e := msgpack.GetEncoder()
	defer msgpack.PutEncoder(e)
	e.Reset(&buf)
	e.UseCompactInts(true)
	err := e.EncodeString("text")
	if err == nil {
		err = e.EncodeString(text)
	}
	if err == nil {
		err = e.EncodeString("source")
	}
	if err == nil {
		err = e.Encode(source)
	}
	if err != nil {
		return nil, fmt.Errorf("encode catalog body as msgpack: %w", err)
	}
	return &CatalogBody{text: text, source: source, raw: buf.Bytes()}, nil
}

// Size is the length of the body's encoding: a record made of it is that
// and the few bytes of its per-session fields.
func (b *CatalogBody) Size() int { return len(b.raw) }

// Catalog returns the catalog record of this body for one session's step.
// Its source shares the body's entries, which must not be modified.
func (b *CatalogBody) Catalog(session, step, id string) Catalog {
	return Catalog{V: Version, Session: session, Step: step, ID: id, Role: "user", Text: b.text, Source: b.source}
}

// Encode returns the msgpack encoding of b.Catalog(session, step, id).
func (b *CatalogBody) Encode(session, step, id string) ([]byte, error) {
	return b.AppendEncode(nil, session, step, id)
}

// AppendEncode is Encode writing into dst's spare capacity, as the
// package's AppendEncode does.
func (b *CatalogBody) AppendEncode(dst []byte, session, step, id string) ([]byte, error) {
	buf := bytes.NewBuffer(dst[:0])
	buf.Grow(len(b.raw) + len(session) + len(step) + len(id) + 48)
	e := msgpack.GetEncoder()
	defer msgpack.PutEncoder(e)
	e.Reset(buf)
	e.UseCompactInts(true)
	// A Catalog's seven fields in order, none omitted when empty.
	err := e.EncodeMapLen(7)
	if err == nil {
		err = e.EncodeString("v")
	}
	if err == nil {
		err = e.Encode(Version)
	}
	for _, kv := range [...][2]string{{"session", session}, {"step", step}, {"id", id}, {"role", "user"}} {
		if err == nil {
			err = e.EncodeString(kv[0])
		}
		if err == nil {
			err = e.EncodeString(kv[1])
		}
	}
	if err != nil {
		return nil, fmt.Errorf("encode catalog as msgpack: %w", err)
	}
	buf.Write(b.raw)
	if buf.Len() > MaxPayloadSize {
		return nil, fmt.Errorf("encode catalog: %w", tooLarge(buf.Len()))
	}
	return buf.Bytes(), nil
}
