package processor

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// The memo is bounded, forgets the least recently used conclusion first,
// and remembers nothing at size 0.
func TestRecognitionsBound(t *testing.T) {
	rec := func(seq uint64) record { return record{Subject: "s", Seq: seq, Data: []byte{byte(seq)}} }
	remember := func(r *recognitions, seq uint64) {
		_, fp, _ := r.lookup(rec(seq))
		r.store(rec(seq), fp, recognition{ok: true, step: strconv.FormatUint(seq, 10)})
	}
	known := func(r *recognitions, seq uint64) bool {
		_, _, ok := r.lookup(rec(seq))
		return ok
	}
	r := newRecognitions(3)
	for i := range uint64(5) {
		remember(r, i)
	}
	if n := r.cache.Len(); n != 3 {
		t.Fatalf("len %d, want 3", n)
	}
	for i := range uint64(2) {
		if known(r, i) {
			t.Errorf("%d kept past the bound", i)
		}
	}
	known(r, 2)    // 2 is now the most recently used
	remember(r, 5) // evicts 3
	if known(r, 3) {
		t.Error("least recently used entry kept")
	}
	if rc, _, ok := r.lookup(rec(2)); !ok || rc.step != "2" {
		t.Errorf("recently used entry: %+v %v", rc, ok)
	}
	none := newRecognitions(0)
	remember(none, 1)
	if known(none, 1) {
		t.Error("a zero-size memo stores")
	}
}

// storedCatalog is a catalog record as a session read returns it.
func storedCatalog(t testing.TB, seq uint64, sid, step, producer string, entries ...catalog.Entry) record {
	t.Helper()
	if entries == nil {
		entries = []catalog.Entry{}
	}
	c := events.Catalog{
		V: events.Version, Session: sid, Step: step, ID: sid + ":" + step + ":catalog.append", Role: "user",
		Text:   catalog.Render(catalog.UpdateInitial, entries),
		Source: events.CatalogSource{Kind: events.SourceKindCatalog, Producer: producer, Update: "initial", Entries: wireEntries(entries), Digest: catalog.Digest(entries)},
	}
	data, err := events.Encode(events.Msgpack, c)
	if err != nil {
		t.Fatal(err)
	}
	return record{
		Subject: events.Subject(events.DefaultPrefix, sid, events.KindCatalog),
		Seq:     seq,
		Header:  history.Header{events.HeaderContentType: []string{events.ContentTypeMsgpack}},
		Data:    data,
	}
}

func TestRecogniseMemo(t *testing.T) {
	p := &Processor{cfg: Config{ToolOwner: "me"}.WithDefaults(), recognised: newRecognitions(16)}
	a := []catalog.Entry{{Name: "a-skill", Description: "A."}}
	b := []catalog.Entry{{Name: "b-skill", Description: "B."}}

	first := storedCatalog(t, 7, "s1", "1", "me", a...)
	for range 2 { // a miss, then a hit: the same conclusion
		o, ok := p.recognise("s1", first)
		if !ok || o.Digest != catalog.Digest(a) || o.Step != "1" || o.Seq != 7 {
			t.Fatalf("recognise: %+v %v", o, ok)
		}
	}
	if n := p.recognised.cache.Len(); n != 1 {
		t.Fatalf("%d conclusions remembered, want 1", n)
	}

	// A hit answers from the memo without decoding: plant a conclusion
	// for the exact bytes and see it come back.
	_, fp, hit := p.recognised.lookup(first)
	if !hit {
		t.Fatal("no hit for a remembered record")
	}
	p.recognised.store(first, fp, recognition{ok: true, digest: "planted", step: "x"})
	if o, _ := p.recognise("s1", first); o.Digest != "planted" {
		t.Fatalf("hit decoded again: %+v", o)
	}

	// The same sequence holding another message (a stream created again
	// under the same name) is judged on its own bytes.
	cases := []struct {
		name   string
		s      record
		sid    string
		ok     bool
		digest string
		step   string
	}{
		{"another catalog", storedCatalog(t, 7, "s1", "2", "me", b...), "s1", true, catalog.Digest(b), "2"},
		{"same bytes, other encoding", func() record {
			s := storedCatalog(t, 7, "s1", "1", "me", a...)
			s.Header = history.Header{events.HeaderContentType: []string{events.ContentTypeJSON}}
			return s
		}(), "s1", false, "", ""},
		{"foreign producer", storedCatalog(t, 7, "s1", "1", "them", a...), "s1", false, "", ""},
		{"other session", storedCatalog(t, 7, "s2", "1", "me", a...), "s2", true, catalog.Digest(a), "1"},
		{"not a catalog", record{Subject: first.Subject, Seq: 7, Header: first.Header, Data: []byte{0xc1}}, "s1", false, "", ""},
		{"a new sequence", storedCatalog(t, 8, "s1", "3", "me", b...), "s1", true, catalog.Digest(b), "3"},
	}
	for _, c := range cases {
		for range 2 {
			o, ok := p.recognise(c.sid, c.s)
			if ok != c.ok || o.Digest != c.digest || o.Step != c.step {
				t.Errorf("%s: %+v %v, want ok %v digest %q step %q", c.name, o, ok, c.ok, c.digest, c.step)
			}
		}
	}
	// The record a foreign one replaced is judged again when it comes back.
	if o, ok := p.recognise("s1", first); !ok || o.Digest != catalog.Digest(a) {
		t.Fatalf("original record: %+v %v", o, ok)
	}
}

// With the server's store time, the record's time (not its bytes) tells
// a message apart from another one at the same sequence.
func TestRecogniseMemoStoreTime(t *testing.T) {
	p := &Processor{cfg: Config{ToolOwner: "me"}.WithDefaults(), recognised: newRecognitions(16)}
	a := []catalog.Entry{{Name: "a-skill", Description: "A."}}
	b := []catalog.Entry{{Name: "b-skill", Description: "B."}}
	at := func(s record, ts string) record {
		s.Header = history.Header{events.HeaderContentType: s.Header[events.HeaderContentType], hdrTimeStamp: []string{ts}}
		return s
	}
	first := at(storedCatalog(t, 7, "s1", "1", "me", a...), "2026-12-02T20:00:00.000000001Z")
	if o, ok := p.recognise("s1", first); !ok || o.Digest != catalog.Digest(a) {
		t.Fatalf("recognise: %+v %v", o, ok)
	}
	_, fp, hit := p.recognised.lookup(first)
	if !hit {
		t.Fatal("no hit for a remembered record")
	}
	p.recognised.store(first, fp, recognition{ok: true, digest: "planted", step: "1"})
	if o, _ := p.recognise("s1", first); o.Digest != "planted" {
		t.Fatalf("hit decoded again: %+v", o)
	}
	// Another stream's message at the same sequence, same size even: its
	// store time differs.
	other := at(storedCatalog(t, 7, "s1", "2", "me", b...), "2026-12-02T21:00:00.000000001Z")
	if len(other.Data) != len(first.Data) {
		t.Fatalf("test records differ in size: %d, %d", len(other.Data), len(first.Data))
	}
	if o, ok := p.recognise("s1", other); !ok || o.Digest != catalog.Digest(b) || o.Step != "2" {
		t.Fatalf("other message at the same sequence: %+v %v", o, ok)
	}
}

func TestOursCatalog(t *testing.T) {
	p := &Processor{cfg: Config{ToolOwner: "me"}.WithDefaults(), recognised: newRecognitions(16)}
	a := []catalog.Entry{{Name: "a-skill", Description: "A."}}
	s := storedCatalog(t, 3, "s1", "1", "me", a...)
	o, ok := p.recognise("s1", s)
	if !ok {
		t.Fatal("not recognised")
	}
	c, err := o.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if c.Step != "1" || c.Session != "s1" || c.Source.Digest != catalog.Digest(a) || c.Text != catalog.Render(catalog.UpdateInitial, a) {
		t.Fatalf("decoded %+v", c)
	}
}

func BenchmarkRecognise(b *testing.B) {
	entries := make([]catalog.Entry, 50)
	for i := range entries {
		entries[i] = catalog.Entry{Name: "skill-" + strconv.Itoa(i), Description: "Does thing number " + strconv.Itoa(i) + " for the benchmark, carefully."}
	}
	s := storedCatalog(b, 1, "s", "1", "me", entries...)
	for _, bc := range []struct {
		name string
		size int
	}{{"memo", recognitionMemoSize}, {"nomemo", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			p := &Processor{cfg: Config{ToolOwner: "me"}.WithDefaults(), recognised: newRecognitions(bc.size)}
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := p.recognise("s", s); !ok {
					b.Fatal("not recognised")
				}
			}
		})
	}
}

// waitDescription waits until the registry serves description for name.
func (e *env) waitDescription(name, description string) {
	e.t.Helper()
	poll(e.t, func() error {
		snap, err := e.registry.Snapshot(context.Background(), catalog.At(e.cwd))
		if err != nil {
			return err
		}
		for _, s := range snap.Skills {
			if s.Name == name && s.Description == description {
				return nil
			}
		}
		return fmt.Errorf("registry serves %+v, want %s: %q", snap.Skills, name, description)
	})
}

// With a caching registry the processor decides from the registry's kept
// prepared view; an edit on disk must still reach the next pre-step.
func TestKeptViewFollowsSkillEdits(t *testing.T) {
	e := newEnv(t)
	e.withoutFlaky()
	if _, ok := any(e.registry).(Preparer); !ok {
		t.Fatal("the registry does not keep prepared views")
	}
	e.writeSkill("a-skill", "First words.")
	e.waitSkills("a-skill")
	proc := e.start()
	w := e.worker()
	const sid = "edits"
	pre := func(step string) events.Decision {
		return w.preStep(events.PreStep{Session: sid, Step: step, Cwd: e.cwd, Tools: ourTool()})
	}
	describes := func(d events.Decision, update, description string) {
		t.Helper()
		src := d.Catalog.Source
		if src.Update != update || len(src.Entries) != 1 || src.Entries[0].Description != description {
			t.Fatalf("step %s: catalog %+v, want %s with %q", d.Step, src, update, description)
		}
	}
	d := pre("1")
	e.expect(d, events.OutcomeAppended, 1)
	describes(d, "initial", "First words.")
	e.expect(pre("2"), events.OutcomeUnchanged, 1)
	// Session reads carry the store time recognition keys on.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	s, err := proc.rd.last(ctx, events.Subject(proc.cfg.Prefix, sid, events.KindCatalog), 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Header.Get(hdrTimeStamp) == "" {
		t.Errorf("a Direct Get answer without %s: recognition hashes whole records", hdrTimeStamp)
	}

	e.writeSkill("a-skill", "Second words.")
	e.waitDescription("a-skill", "Second words.")
	d = pre("3")
	e.expect(d, events.OutcomeAppended, 2)
	describes(d, "replacement", "Second words.")
	e.expect(pre("4"), events.OutcomeUnchanged, 2)

	e.writeSkill("b-skill", "Another.")
	e.waitSkills("a-skill", "b-skill")
	d = pre("5")
	e.expect(d, events.OutcomeAppended, 3)
	if n := len(d.Catalog.Source.Entries); n != 2 {
		t.Fatalf("catalog after an addition lists %d skills, want 2", n)
	}
}

// A conclusion remembered from the processor's own append is used for the
// record read back only when its bytes are the ones appended; it then
// counts under the store time like any other.
func TestRecogniseMemoOwnAppend(t *testing.T) {
	p := &Processor{cfg: Config{ToolOwner: "me"}.WithDefaults(), recognised: newRecognitions(16)}
	a := []catalog.Entry{{Name: "a-skill", Description: "A."}}
	b := []catalog.Entry{{Name: "b-skill", Description: "B."}}
	stamped := func(s record) record {
		s.Header = history.Header{events.HeaderContentType: s.Header[events.HeaderContentType], hdrTimeStamp: []string{"2026-12-03T10:00:00Z"}}
		return s
	}
	mine := storedCatalog(t, 9, "s1", "1", "me", a...)
	seen := events.View{Revision: 7, Instance: "m1"}
	p.recognised.remember(9, mine.Subject, mine.Data, recognition{ok: true, digest: "planted", step: "1", view: seen})
	if o, ok := p.recognise("s1", stamped(mine)); !ok || o.Digest != "planted" || o.View != seen {
		t.Fatalf("own append decoded again: %+v %v", o, ok)
	}
	if o, _ := p.recognise("s1", stamped(mine)); o.Digest != "planted" {
		t.Fatalf("second read of own append decoded again: %+v", o)
	}

	// Other bytes of the same size at that sequence (a stream made anew):
	// decoded, not taken from memory.
	p.recognised.remember(10, mine.Subject, mine.Data, recognition{ok: true, digest: "planted", step: "1"})
	other := storedCatalog(t, 10, "s1", "2", "me", b...)
	if len(other.Data) != len(mine.Data) {
		t.Fatalf("test records differ in size: %d, %d", len(other.Data), len(mine.Data))
	}
	if o, ok := p.recognise("s1", stamped(other)); !ok || o.Digest != catalog.Digest(b) || o.Step != "2" {
		t.Fatalf("other bytes at a remembered sequence: %+v %v", o, ok)
	}
}
