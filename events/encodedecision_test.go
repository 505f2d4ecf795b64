package events

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// EncodeDecision with the catalog's bytes gives exactly what Encode gives,
// for every combination of the optional fields.
func TestEncodeDecisionSplicesCatalog(t *testing.T) {
	cat := Catalog{V: Version, Session: "s", Step: "1", ID: "s:1:catalog.append", Role: "user", Text: "text",
		Source: CatalogSource{Kind: SourceKindCatalog, Producer: "me", Update: "initial",
			Entries: []Entry{{Name: "a-skill", Description: "A."}}, Digest: "d", View: &View{Revision: 3, Instance: "m1"}}}
	raw, err := Encode(Msgpack, cat)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []Decision{
		{V: Version, Session: "s", Step: "1", TriggerSeq: 7, Outcome: OutcomeAppended, Catalog: &cat},
		{V: Version, Session: "s", Step: "1", TriggerSeq: 1 << 40, Outcome: OutcomeAppended, Catalog: &cat, Reason: ReasonNoSkills},
		{V: Version, Session: "s", Step: "1", TriggerSeq: 7, Outcome: OutcomeAppended, Catalog: &cat, CatalogSeq: 8},
		{V: Version, Session: "s", Step: "1", TriggerSeq: 7, Outcome: OutcomeAppended, Catalog: &cat, Reason: ReasonNoSkills, CatalogSeq: 1 << 35},
		{V: Version, Session: "s", Step: "1", TriggerSeq: 7, Outcome: OutcomeAppended, Catalog: &cat,
			Error: &ErrorInfo{Code: CodeBadRequest, Message: "m"}, Reason: ReasonNoSkills},
		{V: Version, Session: "s", Step: "1", TriggerSeq: 7, Outcome: OutcomeAppended, Catalog: &cat, CatalogSeq: 1 << 20,
			CatalogSeqs: []uint64{3, 1 << 19, 1 << 20}, CurrentList: &CurrentList{Entries: []Entry{{Name: "a", Description: "b"}, {Name: "c"}}, Digest: "d"}},
		{V: Version, Session: "s", Step: "1", TriggerSeq: 7, Outcome: OutcomeAppended, Catalog: &cat, CatalogSeq: 9, CatalogSeqs: []uint64{3, 9}},
	} {
		want, err := Encode(Msgpack, d)
		if err != nil {
			t.Fatal(err)
		}
		var list []byte
		if d.CurrentList != nil {
			if list, err = EncodeCurrentList(*d.CurrentList); err != nil {
				t.Fatal(err)
			}
			// Without the list's bytes the decision is still encoded whole.
			if got, err := EncodeDecision(Msgpack, d, raw); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("EncodeDecision without the list's bytes = %x, %v; want %x", got, err, want)
			}
		}
		got, err := AppendDecisionList(nil, Msgpack, d, raw, list)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("AppendDecisionList(%+v) = %x, %v; want %x", d, got, err, want)
		}
		back, err := DecodeDecision(Msgpack, got)
		if err != nil || back.Catalog == nil || back.Catalog.Source.View.Instance != "m1" {
			t.Fatalf("decode back: %+v, %v", back, err)
		}
		// Without its catalog, the decision is written the same way.
		bare := d
		bare.Catalog = nil
		want, _ = Encode(Msgpack, bare)
		if got, err := AppendDecisionList(nil, Msgpack, bare, nil, list); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("EncodeDecision(%+v, nil) = %x, %v; want %x", bare, got, err, want)
		}
		// JSON ignores the bytes; msgpack without them encodes as usual.
		for enc, b := range map[Encoding][]byte{JSON: raw, Msgpack: nil} {
			got, err := EncodeDecision(enc, d, b)
			want, _ := Encode(enc, d)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("EncodeDecision(%v) differs from Encode", enc)
			}
		}
	}
}

// A catalog encoded from its shared body is byte for byte the catalog
// encoded whole, with and without the optional source fields, and
// decodes back to the same record.
func TestCatalogBodyEncodesAsEncode(t *testing.T) {
	for _, src := range []CatalogSource{
		{Kind: SourceKindCatalog, Producer: "me", Update: "initial", Entries: []Entry{{Name: "a-skill", Description: "A."}, {Name: "b-skill"}},
			Digest: "d", Omitted: 3, View: &View{Revision: 1 << 33, Instance: "m1"}},
		{Kind: SourceKindCatalog, Producer: "me", Update: "replacement", Digest: "d"}, // nil entries: an empty list
	} {
		body, err := NewCatalogBody("some text ✓", src)
		if err != nil {
			t.Fatal(err)
		}
		for _, ids := range [][3]string{{"s", "1", "s:1:catalog.append"}, {"", "", ""}, {strings.Repeat("x", 128), "step-ü", "id"}} {
			cat := body.Catalog(ids[0], ids[1], ids[2])
			want, err := Encode(Msgpack, cat)
			if err != nil {
				t.Fatal(err)
			}
			got, err := body.Encode(ids[0], ids[1], ids[2])
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("body.Encode(%q) = %x, %v; want %x", ids, got, err, want)
			}
			if ids[0] == "" {
				continue // encodes as Encode does; not a valid record
			}
			back, err := DecodeCatalog(Msgpack, got)
			if err != nil || back.Session != ids[0] || back.Text != "some text ✓" || back.Source.Digest != "d" {
				t.Fatalf("decode back: %+v, %v", back, err)
			}
		}
	}
	// Too large for a record: refused like Encode refuses it.
	body, err := NewCatalogBody(strings.Repeat("x", MaxPayloadSize), CatalogSource{Kind: SourceKindCatalog})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := body.Encode("s", "1", "id"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized body: %v, want ErrTooLarge", err)
	}
}
