package events

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// triggerSeeds are trigger payloads of the plain shape and of every shape
// next to it that the fast path must leave to the library.
func triggerSeeds(t testing.TB) [][]byte {
	enc := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var seeds [][]byte
	for _, name := range []string{"prestep.msgpack", "skillcall.msgpack", "skillsearch.msgpack"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	tool := map[string]any{"name": "skill", "owner": "skillstream"}
	pre := func(change func(m map[string]any)) []byte {
		m := map[string]any{"v": 1, "session": "s-1", "step": "7", "cwd": "/work", "tools": []any{tool},
			"deadlineMs": 1700000000000, "project": "p", "resourceDir": "/r"}
		change(m)
		return enc(m)
	}
	call := func(change func(m map[string]any)) []byte {
		m := map[string]any{"v": 1, "session": "s-1", "call": "c-1", "cwd": "/work", "args": map[string]any{"name": "a-skill"},
			"deadlineMs": 5}
		change(m)
		return enc(m)
	}
	search := func(change func(m map[string]any)) []byte {
		m := map[string]any{"v": 1, "session": "s-1", "call": "c-1", "cwd": "/work", "args": map[string]any{"query": "pdf", "limit": 3, "offset": 9},
			"deadlineMs": 5}
		change(m)
		return enc(m)
	}
	for _, args := range []any{
		map[string]any{},
		map[string]any{"query": "pdf"},
		map[string]any{"query": 5, "limit": "5", "offset": 2.5},
		map[string]any{"query": []byte("pdf"), "limit": uint64(math.MaxUint64), "offset": int64(math.MinInt64)},
		map[string]any{"query": nil, "limit": nil},
		map[string]any{"query": "pdf", "other": true},
		map[string]any{"query": []any{"a"}, "limit": map[string]any{"a": 1}, "offset": true},
		map[string]any{"query": "pdf", "limit": math.NaN(), "offset": math.Inf(1)},
		map[string]any{"query": "pdf", "limit": float32(3), "offset": 3.0},
		map[int]any{1: 2},
		[]any{"pdf"},
		nil,
		"pdf",
	} {
		seeds = append(seeds, search(func(m map[string]any) { m["args"] = args }))
	}
	for _, change := range []func(map[string]any){
		func(map[string]any) {},
		func(m map[string]any) { delete(m, "v") },
		func(m map[string]any) { m["v"] = 2 },
		func(m map[string]any) { m["v"] = -1 },
		func(m map[string]any) { m["v"] = uint64(math.MaxUint64) },
		func(m map[string]any) { m["v"] = nil },
		func(m map[string]any) { m["userText"] = []any{"/pdf go", "and /docx"} },
		func(m map[string]any) { m["userText"] = []any{} },
		func(m map[string]any) { m["userText"] = []any{"a", 1} },
		func(m map[string]any) { m["userText"] = "/pdf" },
		func(m map[string]any) { m["userText"] = []any{nil} },
		func(m map[string]any) { m["userText"] = []any{"/pdf\x07"} },
		func(m map[string]any) { m["v"] = 1.0 },
		func(m map[string]any) { m["session"] = nil },
		func(m map[string]any) { m["session"] = []byte("s-1") },
		func(m map[string]any) { m["session"] = "bad session" },
		func(m map[string]any) { m["step"], m["call"] = 12, 12 },
		func(m map[string]any) { m["cwd"] = 3 },
		func(m map[string]any) { delete(m, "cwd") },
		func(m map[string]any) { m["deadlineMs"] = -5 },
		func(m map[string]any) { m["deadlineMs"] = uint64(math.MaxInt64) + 1 },
		func(m map[string]any) { m["deadlineMs"] = int8(-3) },
		func(m map[string]any) { m["deadlineMs"] = int16(-300) },
		func(m map[string]any) { m["deadlineMs"] = int32(-70000) },
		func(m map[string]any) { m["deadlineMs"] = int64(-5e9) },
		func(m map[string]any) { m["deadlineMs"] = uint16(60000) },
		func(m map[string]any) { m["deadlineMs"] = uint32(4e9) },
		func(m map[string]any) { m["v"] = int16(1) },
		func(m map[string]any) { m["extra"] = []int{1} },
		func(m map[string]any) { m["tools"] = []any{} },
		func(m map[string]any) { m["tools"] = nil },
		func(m map[string]any) { m["tools"] = []any{nil} },
		func(m map[string]any) { m["tools"] = []any{map[string]any{"name": "x", "owner": "y", "more": 1}} },
		func(m map[string]any) { m["tools"] = []any{map[string]any{"name": "x"}} },
		func(m map[string]any) { m["tools"] = map[string]any{} },
		func(m map[string]any) { m["args"] = map[string]any{} },
		func(m map[string]any) { m["args"] = nil },
		func(m map[string]any) { m["args"] = map[string]any{"name": "a", "other": 1} },
		func(m map[string]any) { m["args"] = map[string]any{"name": nil} },
		func(m map[string]any) { delete(m, "args") },
		func(m map[string]any) { m["minStoreRevision"] = 7 },
		func(m map[string]any) { m["minStoreRevision"] = uint32(4e9) },
		func(m map[string]any) { m["minStoreRevision"] = uint64(math.MaxUint64) },
		func(m map[string]any) { m["minStoreRevision"] = -1 },
		func(m map[string]any) { m["minStoreRevision"] = nil },
		func(m map[string]any) { m["minStoreRevision"] = "7" },
		func(m map[string]any) { m["minStoreRevision"] = 1.5 },
		func(m map[string]any) { m["minStoreEpoch"] = "5d41402abc4b2a76" },
		func(m map[string]any) { m["minStoreEpoch"] = "" },
		func(m map[string]any) { m["minStoreEpoch"] = "bad epoch" },
		func(m map[string]any) { m["minStoreEpoch"] = strings.Repeat("e", 65) },
		func(m map[string]any) { m["minStoreEpoch"] = 7 },
		func(m map[string]any) { m["minStoreEpoch"] = nil },
	} {
		seeds = append(seeds, pre(change), call(change), search(change))
	}
	// A key twice, and a payload cut short.
	seeds = append(seeds,
		[]byte{0x82, 0xa1, 'v', 0x01, 0xa1, 'v', 0x01},
		[]byte{0x82, 0xa1, 'v', 0x01, 0xa7, 's', 'e', 's', 's', 'i', 'o', 'n'})
	return seeds
}

// decodeTriggerBothWays decodes b as a pre-step and as a skill call with the
// fast path on and off, and describes any difference.
func decodeTriggerBothWays(b []byte) string {
	defer func() { fastDecoding = true }()
	for _, dec := range []func([]byte) (any, error){
		func(b []byte) (any, error) { return DecodePreStep(Msgpack, b) },
		func(b []byte) (any, error) { return DecodeSkillCall(Msgpack, b) },
		func(b []byte) (any, error) { return DecodeSkillSearch(Msgpack, b) },
	} {
		fastDecoding = true
		fv, ferr := dec(b)
		fastDecoding = false
		sv, serr := dec(b)
		// (A search's argument may be NaN, which DeepEqual finds unequal
		// to itself; its printed form is the same.)
		if fmt.Sprint(ferr) != fmt.Sprint(serr) || (!reflect.DeepEqual(fv, sv) && fmt.Sprintf("%#v", fv) != fmt.Sprintf("%#v", sv)) {
			return fmt.Sprintf("%x: fast %#v, %v; library %#v, %v", b, fv, ferr, sv, serr)
		}
	}
	return fastTakesOnlyChecked(b)
}

// The fast path gives what the library gives, for the plain shape and for
// every shape next to it.
func TestFastTriggersMatchLibrary(t *testing.T) {
	for _, b := range triggerSeeds(t) {
		if diff := decodeTriggerBothWays(b); diff != "" {
			t.Error(diff)
		}
	}
}

// The fast path does take the plain shape (else it would only cost).
func TestFastTriggersTakePlainShape(t *testing.T) {
	seeds := triggerSeeds(t)
	var p preStepWire
	var c skillCallWire
	if !p.fastMsgpack(seeds[0]) || p.Session == "" || len(p.Tools) == 0 {
		t.Errorf("pre-step fixture not taken: %+v", p)
	}
	if !c.fastMsgpack(seeds[1]) || c.Args == nil || c.Args.Name == nil {
		t.Errorf("skill call fixture not taken: %+v", c)
	}
	if p.fastMsgpack(seeds[1]) || c.fastMsgpack(seeds[0]) {
		t.Error("a payload of the other kind was taken")
	}
	var sw skillSearchWire
	if !sw.fastMsgpack(seeds[2]) || sw.Args == nil || sw.Args.Query != "fill PDF forms" || sw.Args.Limit != int64(5) {
		t.Errorf("skill search fixture not taken: %+v", sw)
	}
	if sw.fastMsgpack(seeds[1]) || c.fastMsgpack(seeds[2]) {
		t.Error("a skill call taken as a search, or the reverse")
	}
}

func FuzzFastTriggers(f *testing.F) {
	for _, b := range triggerSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if diff := decodeTriggerBothWays(b); diff != "" {
			t.Fatal(diff)
		}
	})
}

// The triggers' own unwrap does what the reflective unwrap does.
func TestTriggerUnwrapMatchesReflection(t *testing.T) {
	v := 3
	p := preStepWire{V: &v, Step: "12", PreStep: PreStep{Session: "s", Step: "other", Tools: []Tool{{Name: "n"}}}}
	p2 := p
	gp, gv := p.unwrap()
	wp, wv := unwrap[PreStep](reflect.ValueOf(&p2).Elem())
	if !reflect.DeepEqual(*gp, *wp) || gv != wv {
		t.Errorf("pre-step: %+v %v, want %+v %v", *gp, gv, *wp, wv)
	}
	c := skillCallWire{Call: "9", SkillCall: SkillCall{Session: "s", V: 7}}
	c2 := c
	gc, gcv := c.unwrap()
	wc, wcv := unwrap[SkillCall](reflect.ValueOf(&c2).Elem())
	if !reflect.DeepEqual(*gc, *wc) || gcv != wcv || gc.V != 0 {
		t.Errorf("skill call: %+v %v, want %+v %v", *gc, gcv, *wc, wcv)
	}
}

// answerSeeds are Decision and Catalog payloads of the plain shape (as
// Encode writes them) and of the shapes next to it.
// seedList is n entries whose descriptions end in desc.
func seedList(n int, desc string) []Entry {
	es := make([]Entry, n)
	for i := range es {
		es[i] = Entry{Name: fmt.Sprintf("skill-%03d", i), Description: fmt.Sprintf("Skill %d. %s", i, desc)}
	}
	return es
}

func answerSeeds(t testing.TB) [][]byte {
	enc := func(v any) []byte {
		b, err := Encode(Msgpack, v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cat := Catalog{V: 1, Session: "s-1", Step: "7", ID: "s-1:7:catalog", Role: "user", Text: "<skills>…</skills>",
		Source: CatalogSource{Kind: "skill-catalog", Producer: "skillstream", Update: "initial", Digest: "d",
			Entries: []Entry{{Name: "pdf", Description: "Read PDFs."}, {Name: "docx", Description: "Word."}},
			Omitted: 2, View: &View{Revision: 9, Instance: "i", Epoch: "e"}}}
	dec := Decision{V: 1, Session: "s-1", Step: "7", TriggerSeq: 12, Outcome: "appended", Catalog: &cat, CatalogSeq: 13}
	seeds := [][]byte{enc(cat), enc(dec),
		enc(Decision{V: 1, Session: "s", Step: "1", TriggerSeq: 3, Outcome: "unchanged", CatalogSeq: 2}),
		enc(Decision{V: 1, Session: "s", Step: "1", Outcome: "rejected", Error: &ErrorInfo{Code: "bad_request", Message: "m"}}),
		enc(Decision{V: 1, Session: "s", Step: "1", Outcome: "empty", Reason: ReasonNoSkills}),
		enc(Decision{V: 1, Session: "s", Step: "1", Outcome: "unchanged", Ignored: []Ignored{{Name: "x", Reason: IgnoredUnknown}}}),
		enc(Decision{V: 1, Session: "s", Step: "1", TriggerSeq: 3, Outcome: "unchanged", CatalogSeq: 9, CatalogSeqs: []uint64{2, 5, 9},
			CurrentList: &CurrentList{Entries: seedList(40, "Read."), Digest: "d"}}),
		enc(Decision{V: 1, Session: "s", Step: "2", TriggerSeq: 4, Outcome: "unchanged", CatalogSeq: 9, CatalogSeqs: []uint64{2, 5, 9},
			CurrentList: &CurrentList{Entries: seedList(40, "Read!"), Digest: "d"}}),
		enc(Decision{V: 1, Session: "s", Step: "1", TriggerSeq: 3, Outcome: "unchanged", CatalogSeq: 9, CatalogSeqs: []uint64{2, 9},
			CurrentList: &CurrentList{Entries: seedList(1, ""), Digest: "d"}}),
	}
	// The same as maps, changed one way or another.
	asMap := func(b []byte) map[string]any {
		var m map[string]any
		if err := msgpack.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, change := range []func(d, c, src map[string]any){
		func(d, c, src map[string]any) {},
		func(d, c, src map[string]any) { d["v"] = 2 },
		func(d, c, src map[string]any) { delete(d, "v") },
		func(d, c, src map[string]any) { d["step"] = 7 },
		func(d, c, src map[string]any) { c["step"] = nil },
		func(d, c, src map[string]any) { d["triggerSeq"] = -1 },
		func(d, c, src map[string]any) { d["triggerSeq"] = uint64(math.MaxUint64) },
		func(d, c, src map[string]any) { d["catalogSeq"] = "13" },
		func(d, c, src map[string]any) { d["catalog"] = nil },
		func(d, c, src map[string]any) { d["error"] = map[string]any{"code": "x", "extra": 1} },
		func(d, c, src map[string]any) { d["error"] = map[string]any{} },
		func(d, c, src map[string]any) { d["extra"] = true },
		func(d, c, src map[string]any) { c["text"] = []byte("bin") },
		func(d, c, src map[string]any) { c["text"] = nil },
		func(d, c, src map[string]any) { c["role"] = 1 },
		func(d, c, src map[string]any) { c["source"] = nil },
		func(d, c, src map[string]any) { src["entries"] = []any{} },
		func(d, c, src map[string]any) { src["entries"] = nil },
		func(d, c, src map[string]any) { src["entries"] = []any{nil} },
		func(d, c, src map[string]any) { src["entries"] = []any{map[string]any{"name": "a"}} },
		func(d, c, src map[string]any) {
			src["entries"] = []any{map[string]any{"name": "a", "description": "b", "more": 1}}
		},
		func(d, c, src map[string]any) { src["entries"] = []any{map[string]any{"name": 5, "description": "b"}} },
		func(d, c, src map[string]any) { src["entries"] = map[string]any{} },
		func(d, c, src map[string]any) { src["omitted"] = -3 },
		func(d, c, src map[string]any) { src["omitted"] = uint64(math.MaxUint64) },
		func(d, c, src map[string]any) { src["omitted"] = nil },
		func(d, c, src map[string]any) { src["view"] = nil },
		func(d, c, src map[string]any) { src["view"] = map[string]any{"revision": -1} },
		func(d, c, src map[string]any) { src["view"] = map[string]any{"revision": 1, "other": 2} },
		func(d, c, src map[string]any) { src["view"] = map[string]any{} },
		func(d, c, src map[string]any) { delete(src, "digest") },
	} {
		d := asMap(enc(dec))
		c := d["catalog"].(map[string]any)
		change(d, c, c["source"].(map[string]any))
		seeds = append(seeds, enc(d))
		if cc, ok := d["catalog"].(map[string]any); ok {
			seeds = append(seeds, enc(cc))
		}
	}
	// A change list, and a decision carrying one.
	changes := Catalog{V: 1, Session: "s-1", Step: "8", ID: "s-1:8:catalog", Role: "user", Text: "<skill_catalog_changes>",
		Source: CatalogSource{Kind: "skill-catalog", Producer: "skillstream", Update: UpdateChanges, Base: 13, Digest: "d2", Count: 40,
			Changes: []Change{{Name: "a", Change: ChangeAdded, Description: "A."}, {Name: "b", Change: ChangeRemoved}},
			View:    &View{Revision: 10, Instance: "i"}}}
	withChanges := Decision{V: 1, Session: "s-1", Step: "8", TriggerSeq: 20, Outcome: "appended", Catalog: &changes, CatalogSeq: 21,
		CatalogSeqs: []uint64{13, 21}, CurrentList: &CurrentList{Entries: seedList(40, "y"), Digest: "d2"}}
	seeds = append(seeds, enc(changes), enc(withChanges))
	for _, change := range []func(src map[string]any){
		func(src map[string]any) { src["changes"] = []any{} },
		func(src map[string]any) { src["changes"] = nil },
		func(src map[string]any) { src["changes"] = []any{map[string]any{"name": "a"}} },
		func(src map[string]any) {
			src["changes"] = []any{map[string]any{"name": "a", "change": "added", "x": 1}}
		},
		func(src map[string]any) { src["changes"] = []any{map[string]any{"name": "a", "change": 3}} },
		func(src map[string]any) { src["base"] = -1 },
		func(src map[string]any) { src["count"] = uint64(math.MaxUint64) },
		func(src map[string]any) { src["count"] = "1" },
		func(src map[string]any) { src["entries"] = []any{map[string]any{"name": "a", "description": "b"}} },
	} {
		c := asMap(enc(changes))
		change(c["source"].(map[string]any))
		seeds = append(seeds, enc(c))
	}
	// A current list and its records, changed one way or another.
	withList := Decision{V: 1, Session: "s", Step: "3", TriggerSeq: 30, Outcome: "unchanged", CatalogSeq: 9, CatalogSeqs: []uint64{2, 9},
		CurrentList: &CurrentList{Entries: seedList(30, "x"), Digest: "d"}}
	for _, change := range []func(d, l map[string]any){
		func(d, l map[string]any) { d["catalogSeqs"] = []any{} },
		func(d, l map[string]any) { d["catalogSeqs"] = []any{-1, 2} },
		func(d, l map[string]any) { d["catalogSeqs"] = []any{"2"} },
		func(d, l map[string]any) { d["catalogSeqs"] = nil },
		func(d, l map[string]any) { d["currentList"] = nil },
		func(d, l map[string]any) { l["entries"] = []any{} },
		func(d, l map[string]any) { l["entries"] = nil },
		func(d, l map[string]any) { delete(l, "digest") },
		func(d, l map[string]any) { l["extra"] = 1 },
		func(d, l map[string]any) {
			es := l["entries"].([]any)
			es[len(es)-1] = map[string]any{"name": "z", "description": "y", "more": 1}
		},
	} {
		d := asMap(enc(withList))
		change(d, d["currentList"].(map[string]any))
		seeds = append(seeds, enc(d))
	}
	return append(seeds, []byte{0x82, 0xa1, 'v', 0x01, 0xa1, 'v', 0x01})
}

// A current list decoded again from the same bytes is the list decoded
// the first time; other bytes, even of the same length, are decoded anew.
func TestCurrentListRemembered(t *testing.T) {
	d := Decision{V: 1, Session: "s", Step: "1", TriggerSeq: 3, Outcome: "unchanged", CatalogSeq: 9, CatalogSeqs: []uint64{2, 5, 9},
		CurrentList: &CurrentList{Entries: seedList(50, "Read."), Digest: "d"}}
	b, err := Encode(Msgpack, d)
	if err != nil {
		t.Fatal(err)
	}
	first, err := DecodeDecision(Msgpack, b)
	if err != nil || !reflect.DeepEqual(first, d) {
		t.Fatalf("first decode: %+v, %v", first, err)
	}
	d.Step = "2"
	b2, _ := Encode(Msgpack, d)
	second, err := DecodeDecision(Msgpack, b2)
	if err != nil || !reflect.DeepEqual(second, d) {
		t.Fatalf("second decode: %+v, %v", second, err)
	}
	if &first.CurrentList.Entries[0] != &second.CurrentList.Entries[0] {
		t.Error("the same list's entries were decoded again")
	}
	d.CurrentList = &CurrentList{Entries: seedList(50, "Read!"), Digest: "d"}
	b3, _ := Encode(Msgpack, d)
	if len(b3) != len(b2) {
		t.Fatalf("lengths differ: %d, %d", len(b3), len(b2))
	}
	third, err := DecodeDecision(Msgpack, b3)
	if err != nil || !reflect.DeepEqual(third, d) {
		t.Fatalf("other list: %+v, %v", third, err)
	}
}

// decodeAnswerBothWays decodes b as a Decision and as a Catalog with the
// fast path on and off, and describes any difference.
func decodeAnswerBothWays(b []byte) string {
	defer func() { fastDecoding = true }()
	for _, dec := range []func([]byte) (any, error){
		func(b []byte) (any, error) { return DecodeDecision(Msgpack, b) },
		func(b []byte) (any, error) { return DecodeCatalog(Msgpack, b) },
	} {
		fastDecoding = true
		fv, ferr := dec(b)
		fastDecoding = false
		sv, serr := dec(b)
		if fmt.Sprint(ferr) != fmt.Sprint(serr) || !reflect.DeepEqual(fv, sv) {
			return fmt.Sprintf("%x: fast %#v, %v; library %#v, %v", b, fv, ferr, sv, serr)
		}
	}
	return fastTakesOnlyChecked(b)
}

// The answers' fast paths give what the library gives.
func TestFastAnswersMatchLibrary(t *testing.T) {
	for _, b := range answerSeeds(t) {
		if diff := decodeAnswerBothWays(b); diff != "" {
			t.Error(diff)
		}
	}
}

// The answers' fast paths take the plain shape.
func TestFastAnswersTakePlainShape(t *testing.T) {
	seeds := answerSeeds(t)
	var c catalogWire
	var d decisionWire
	if !c.fastMsgpack(seeds[0]) || len(c.Source.Entries) != 2 || c.Source.View == nil {
		t.Errorf("catalog not taken: %+v", c)
	}
	if !d.fastMsgpack(seeds[1]) || d.Catalog == nil || d.Catalog.Text == "" || d.CatalogSeq != 13 {
		t.Errorf("decision not taken: %+v", d)
	}
	for i, b := range seeds[2:5] {
		if !d.fastMsgpack(b) {
			t.Errorf("decision %d not taken", i+2)
		}
	}
	// Decisions with a current list (seeds 6 and 7), and a change list
	// alone and in a decision (the two after the seeds changed as maps).
	for _, i := range []int{6, 7} {
		if !d.fastMsgpack(seeds[i]) || d.CurrentList == nil || len(d.CatalogSeqs) != 3 {
			t.Errorf("decision %d with a current list not taken: %+v", i, d)
		}
	}
	enc := func(v any) []byte {
		b, err := Encode(Msgpack, v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cat := Catalog{V: 1, Session: "s", Step: "8", ID: "i", Role: "user", Text: "t",
		Source: CatalogSource{Kind: "skill-catalog", Producer: "p", Update: UpdateChanges, Base: 13, Digest: "d", Count: 4,
			Changes: []Change{{Name: "a", Change: ChangeAdded, Description: "A."}, {Name: "b", Change: ChangeRemoved}}}}
	if !c.fastMsgpack(enc(cat)) || len(c.Source.Changes) != 2 || c.Source.Base != 13 || c.Source.Count != 4 {
		t.Errorf("change list not taken: %+v", c)
	}
	// A source with the options that shaped it, full and change list.
	opts := &CatalogOptions{DescriptionMax: 300, MaxLength: 0, MaxSkillBytes: 1 << 20, ListedMax: 40, Search: true, SearchBodies: true, Updates: "changes", UserInvocation: true,
		ResendsPerMinute: 6, CatalogBytesPerMinute: 4 << 20}
	withOpts := cat
	withOpts.Source.Options = opts
	if !c.fastMsgpack(enc(withOpts)) || c.Source.Options == nil || *c.Source.Options != *opts {
		t.Errorf("change list with options not taken: %+v", c.Source.Options)
	}
	full := Catalog{V: 1, Session: "s", Step: "8", ID: "i", Role: "user", Text: "t",
		Source: CatalogSource{Kind: "skill-catalog", Producer: "p", Update: "initial", Entries: []Entry{{Name: "a", Description: "A."}}, Digest: "d", Options: opts}}
	if !c.fastMsgpack(enc(full)) || c.Source.Options == nil || *c.Source.Options != *opts || len(c.Source.Entries) != 1 {
		t.Errorf("full catalog with options not taken: %+v", c.Source.Options)
	}
	if !d.fastMsgpack(enc(Decision{V: 1, Session: "s", Step: "8", Outcome: "appended", Catalog: &cat, CatalogSeq: 20,
		CatalogSeqs: []uint64{13, 20}, CurrentList: &CurrentList{Entries: seedList(3, ""), Digest: "d"}})) {
		t.Error("decision with a change list not taken")
	}
}

func FuzzFastAnswers(f *testing.F) {
	for _, b := range answerSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if diff := decodeAnswerBothWays(b); diff != "" {
			t.Fatal(diff)
		}
	})
}

// fastTakesOnlyChecked reports bytes a fast path takes that the bounds
// check refuses: the fast paths run before the check, so they must never
// take what it would refuse.
func fastTakesOnlyChecked(b []byte) string {
	for _, w := range []fastWire{&preStepWire{}, &skillCallWire{}, &decisionWire{}, &catalogWire{}} {
		if w.fastMsgpack(b) {
			if err := checkMsgpack(b); err != nil {
				return fmt.Sprintf("%x: %T takes it, the bounds check refuses it: %v", b, w, err)
			}
		}
	}
	return ""
}

// A list declaring more values than the bytes that follow is refused
// before anything is made for it, on the fast path as by the check, even
// when the payload as a whole is larger than the count.
func TestFastRefusesCountBeyondBytes(t *testing.T) {
	// {"text": <900,000 bytes>, "source": {"entries": [800,000 entries declared, one given]}}
	b := []byte{0x82, 0xa4, 't', 'e', 'x', 't', 0xdb, 0x00, 0x0d, 0xbb, 0xa0}
	b = append(b, make([]byte, 900_000)...)
	b = append(b, 0xa6, 's', 'o', 'u', 'r', 'c', 'e', 0x81, 0xa7, 'e', 'n', 't', 'r', 'i', 'e', 's',
		0xdd, 0x00, 0x0c, 0x35, 0x00, 0x80)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := DecodeCatalog(Msgpack, b)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "declares 800000 values but only 1 bytes follow") {
		t.Fatalf("err = %v, want the declared count named", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("refusing it allocated %d bytes", grew)
	}
}
