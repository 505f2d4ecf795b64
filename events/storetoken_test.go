package events

import (
	"strings"
	"testing"
)

func TestStoreToken(t *testing.T) {
	for s, want := range map[string]StoreToken{
		"5d41402abc4b2a76:42": {Epoch: "5d41402abc4b2a76", Revision: 42},
		"42":                  {Revision: 42},
		"e_1-x:0":             {Epoch: "e_1-x", Revision: 0},
	} {
		got, err := ParseStoreToken(s)
		if err != nil || got != want {
			t.Errorf("ParseStoreToken(%q) = %+v, %v; want %+v", s, got, err, want)
		}
		if got.String() != s {
			t.Errorf("%+v prints as %q, want %q", got, got.String(), s)
		}
	}
	for _, s := range []string{"", ":42", "epoch:", "epoch:-1", "epoch:x", "a b:1", strings.Repeat("e", 65) + ":1", "e:1:2", "0x10"} {
		if tok, err := ParseStoreToken(s); err == nil {
			t.Errorf("ParseStoreToken(%q) = %+v, want an error", s, tok)
		}
	}
}
