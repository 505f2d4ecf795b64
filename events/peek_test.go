package events_test

import (
	"errors"
	"testing"

	"github.com/skillstream/skillstream/events"
)

func TestPeekString(t *testing.T) {
	mp, err := events.Encode(events.Msgpack, events.SkillArgs{Name: "pdf"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		enc  events.Encoding
		in   []byte
		want string
		bad  bool
	}{
		{events.Msgpack, mp, "pdf", false},
		{events.JSON, []byte(`{"v":7,"name":"pdf","more":{"x":[1]}}`), "pdf", false},
		{events.JSON, []byte(`{"name":3}`), "", true},
		{events.JSON, []byte(`{"nom":"pdf"}`), "", true},
		{events.JSON, []byte(`["name"]`), "", true},
		{events.JSON, []byte(`null`), "", true},
		{events.Msgpack, []byte{0xc1}, "", true},
		{events.Msgpack, nil, "", true},
	} {
		got, err := events.PeekString(tt.enc, tt.in, "name")
		if tt.bad {
			if !errors.Is(err, events.ErrBadPayload) {
				t.Errorf("PeekString(%q) err = %v, want ErrBadPayload", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("PeekString(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func FuzzPeekString(f *testing.F) {
	f.Add([]byte(`{"name":"a"}`), true)
	f.Add([]byte{0x81, 0xa4, 'n', 'a', 'm', 'e', 0xa1, 'a'}, false)
	f.Fuzz(func(t *testing.T, b []byte, asJSON bool) {
		enc := events.Msgpack
		if asJSON {
			enc = events.JSON
		}
		s, err := events.PeekString(enc, b, "name")
		if err != nil && (s != "" || !errors.Is(err, events.ErrBadPayload)) {
			t.Fatalf("error %v with value %q", err, s)
		}
	})
}
