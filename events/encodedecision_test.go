package events

import (
	"bytes"
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
		{V: Version, Session: "s", Step: "1", TriggerSeq: 7, Outcome: OutcomeAppended, Catalog: &cat,
			Error: &ErrorInfo{Code: CodeBadRequest, Message: "m"}, Reason: ReasonNoSkills},
	} {
		want, err := Encode(Msgpack, d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := EncodeDecision(Msgpack, d, raw)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("EncodeDecision(%+v) = %x, %v; want %x", d, got, err, want)
		}
		back, err := DecodeDecision(Msgpack, got)
		if err != nil || back.Catalog == nil || back.Catalog.Source.View.Instance != "m1" {
			t.Fatalf("decode back: %+v, %v", back, err)
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
