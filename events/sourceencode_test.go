package events

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// libraryEncode is the library's own encoding of s's fields, the
// reference for CatalogSource's hand-written one.
func libraryEncode(t *testing.T, s CatalogSource, compact bool) []byte {
	t.Helper()
	type plain CatalogSource
	if s.Entries == nil {
		s.Entries = []Entry{}
	}
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.UseCompactInts(compact)
	if err := e.Encode(plain(s)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func ourEncode(t *testing.T, s CatalogSource, compact bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.UseCompactInts(compact)
	if err := e.Encode(s); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzCatalogSourceEncoding holds a full catalog's source, written field
// by field, byte for byte equal to the library's encoding of the struct:
// strings of every length class, entries from none to past the 16 that
// fit a fixed array header, omitted and view present or not, compact
// ints or not.
func FuzzCatalogSourceEncoding(f *testing.F) {
	f.Add("skill-catalog", "owner", "initial", "d", 3, 0, "", uint64(0), "", false, true)
	f.Add("skill-catalog", "owner", "replacement", strings.Repeat("x", 40), 17, 250, "desc", uint64(7), "inst", true, false)
	f.Add("", "", "", "", 0, -1, strings.Repeat("é", 200), uint64(1<<40), strings.Repeat("i", 300), true, true)
	f.Add("skill-catalog", "owner", "initial", "d", 6, 0, "desc", uint64(3), "canary", true, true)
	f.Add("skill-catalog", "owner", "replacement", "d", 22, 0, "desc", uint64(0), "", false, false)
	f.Add("skill-catalog", "owner", "replacement", "d", 8, 0, "desc", uint64(4), "stable", true, true)
	f.Fuzz(func(t *testing.T, kind, producer, update, digest string, n, omitted int, desc string, rev uint64, instance string, view, compact bool) {
		if update == UpdateChanges {
			update = "x"
		}
		n = min(max(n, 0), 300)
		s := CatalogSource{Kind: kind, Producer: producer, Update: update, Digest: digest, Omitted: omitted}
		if n > 0 || omitted%2 == 0 {
			s.Entries = make([]Entry, n)
		}
		for i := range s.Entries {
			s.Entries[i] = Entry{Name: strings.Repeat("n", i%70), Description: desc[:len(desc)*i/max(n, 1)]}
		}
		if view {
			s.View = &View{Revision: rev, Instance: instance, Epoch: desc[:len(desc)/2]}
		}
		if n%4 == 2 { // a release's evidence: some entries' origins
			for i := 0; i < n; i += 2 {
				s.Origins = append(s.Origins, EntryOrigin{Name: s.Entries[i].Name, Rev: rev + uint64(i), Digest: digest, Channel: instance})
			}
		}
		if n%5 == 3 { // skills left out as revoked
			for i := 0; i < n; i += 3 {
				s.Revoked = append(s.Revoked, strings.Repeat("r", i%70+1))
			}
		}
		if n%3 == 1 {
			s.Options = &CatalogOptions{DescriptionMax: n, MaxLength: omitted, MaxSkillBytes: int(rev % 1000), ListedMax: n % 7,
				Search: view, Updates: update, UserInvocation: compact}
		}
		want, got := libraryEncode(t, s, compact), ourEncode(t, s, compact)
		if !bytes.Equal(got, want) {
			t.Fatalf("encoding differs from the library's:\n got %x\nwant %x", got, want)
		}
	})
}

// A source with change-list fields set is still written by the library.
func TestCatalogSourceWithChangeFieldsEncodesAsLibrary(t *testing.T) {
	for _, s := range []CatalogSource{
		{Kind: SourceKindCatalog, Update: "initial", Entries: []Entry{{Name: "a"}}, Count: 3},
		{Kind: SourceKindCatalog, Update: "initial", Base: 9},
	} {
		if got, want := ourEncode(t, s, true), libraryEncode(t, s, true); !bytes.Equal(got, want) {
			t.Errorf("%+v: got %x, want %x", s, got, want)
		}
	}
}

func BenchmarkNewCatalogBodyEntries1000(b *testing.B) {
	es := make([]Entry, 1000)
	for i := range es {
		es[i] = Entry{Name: "skill-" + strings.Repeat("x", i%20), Description: strings.Repeat("does things. ", 6)}
	}
	src := CatalogSource{Kind: SourceKindCatalog, Producer: "p", Update: "initial", Entries: es, Digest: "d", View: &View{Revision: 3, Instance: "i"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewCatalogBody("text", src); err != nil {
			b.Fatal(err)
		}
	}
}
