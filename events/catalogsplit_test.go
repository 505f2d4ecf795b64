package events

import (
	"reflect"
	"testing"
)

func splitSample(t testing.TB) *CatalogBody {
	t.Helper()
	b, err := NewCatalogBody("<available_skills>\n- `pdf`: PDFs\n</available_skills>", CatalogSource{
		Kind: "skill-catalog", Producer: "p", Update: "initial", Digest: "d",
		Entries: []Entry{{Name: "pdf", Description: "PDFs"}, {Name: "Bad Name", Description: "x"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A record the processor encodes splits into its fields and a body shared
// by every session's record of the same catalog.
func TestSplitCatalog(t *testing.T) {
	body := splitSample(t)
	a, err := body.Encode("s1", "1", "s1:1:catalog.append")
	if err != nil {
		t.Fatal(err)
	}
	b, err := body.Encode("session-two", "17", "x")
	if err != nil {
		t.Fatal(err)
	}
	pa, ok := SplitCatalog(a)
	if !ok {
		t.Fatal("a processor's record does not split")
	}
	pb, ok := SplitCatalog(b)
	if !ok {
		t.Fatal("a processor's record does not split")
	}
	if pa.Session != "s1" || pa.Step != "1" || pa.ID != "s1:1:catalog.append" || pa.Role != "user" || pb.Session != "session-two" {
		t.Fatalf("fields: %+v %+v", pa, pb)
	}
	if string(pa.Body) != string(pb.Body) {
		t.Fatal("two sessions' records of one body have different body bytes")
	}
	if err := pa.Validate(LayoutFlat); err != nil {
		t.Fatal(err)
	}
	bad, _ := body.Encode("s1", "", "x")
	if p, ok := SplitCatalog(bad); !ok || p.Validate(LayoutFlat) == nil {
		t.Fatalf("a record without a step splits %v and validates", ok)
	}
	// Shapes it leaves to the decoder.
	for name, data := range map[string][]byte{
		"empty":     nil,
		"not a map": {0x91, 0x01},
		"six pairs": {0x86},
		"json":      []byte(`{"v":1}`),
		"truncated": a[:20],
	} {
		if _, ok := SplitCatalog(data); ok {
			t.Errorf("%s: splits", name)
		}
	}
}

// FuzzSplitCatalog checks what readers that remember bodies rely on: a
// record that decodes, given other fields of the kind SplitCatalog reads
// that validate, still decodes, to the same text and source.
func FuzzSplitCatalog(f *testing.F) {
	body := splitSample(f)
	seed, _ := body.Encode("s1", "1", "i")
	f.Add(seed, "s2", "2", "id")
	f.Add(seed, "", "1", "")
	f.Add([]byte{0x87, 0xa1, 'v', 0x01}, "s", "1", "i")
	f.Fuzz(func(t *testing.T, data []byte, session, step, id string) {
		parts, ok := SplitCatalog(data)
		if !ok {
			return
		}
		orig, err := DecodeCatalogIn(LayoutFlat, Msgpack, data)
		if err != nil {
			return
		}
		if err := parts.Validate(LayoutFlat); err != nil {
			t.Fatalf("a record that decodes has fields that do not validate: %v", err)
		}
		if orig.Session != parts.Session || orig.Step != parts.Step || orig.ID != parts.ID || orig.Role != parts.Role {
			t.Fatalf("split %+v, decoded %+v", parts, orig)
		}
		// The same body under other fields.
		other := &CatalogBody{text: orig.Text, source: orig.Source, raw: parts.Body}
		b, err := other.Encode(session, step, id)
		if err != nil {
			return
		}
		op, ok := SplitCatalog(b)
		if !ok || op.Validate(LayoutFlat) != nil {
			return
		}
		got, err := DecodeCatalogIn(LayoutFlat, Msgpack, b)
		if err != nil {
			t.Fatalf("same body, fields that validate: %v", err)
		}
		if got.Text != orig.Text || !reflect.DeepEqual(got.Source, orig.Source) || got.Session != session || got.Step != step {
			t.Fatalf("same body decodes differently:\n%+v\n%+v", got, orig)
		}
	})
}
