package store

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A record's text is refused past what a push publishes, counted in
// characters, not bytes; gc's reading (decodeShape) still takes it.
func TestDecodeRecordBounds(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	base := Record{Name: "a-skill", Description: "D.", Digest: digest, Object: digest, Size: 1, Files: 1}
	for _, c := range []struct {
		what string
		edit func(*Record)
		ok   bool
	}{
		{"plain", func(*Record) {}, true},
		{"description at its bound", func(r *Record) { r.Description = strings.Repeat("é", MaxDescriptionLength) }, true},
		{"description past it", func(r *Record) { r.Description = strings.Repeat("x", MaxDescriptionLength+1) }, false},
		{"whenToUse at its bound", func(r *Record) { r.WhenToUse = strings.Repeat("€", MaxWhenToUseLength) }, true},
		{"whenToUse past it", func(r *Record) { r.WhenToUse = strings.Repeat("x", MaxWhenToUseLength+1) }, false},
		{"both past", func(r *Record) { r.Description, r.WhenToUse = strings.Repeat("x", 30000), strings.Repeat("y", 30000) }, false},
	} {
		r := base
		c.edit(&r)
		data, _ := json.Marshal(r)
		got, err := decodeRecord("a-skill", data)
		if c.ok != (err == nil) {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrBadRecord) || !errors.Is(err, ErrRecordBounds) {
				t.Errorf("%s: %v does not wrap ErrBadRecord and ErrRecordBounds", c.what, err)
			}
			if _, err := decodeShape("a-skill", data); err != nil {
				t.Errorf("%s: gc cannot read it: %v", c.what, err)
			}
			continue
		}
		if got.summaryBytes() != int64(len(r.Name)+len(r.Description)+len(r.WhenToUse)) {
			t.Errorf("%s: summary bytes %d", c.what, got.summaryBytes())
		}
	}
}

// Whatever the value, decoding never panics, and a record it accepts is
// within the bounds.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"name":"a-skill","description":"D.","digest":"` + strings.Repeat("ab", 32) + `","object":"` + strings.Repeat("ab", 32) + `","size":1,"files":1}`))
	f.Add([]byte(`{"name":"a-skill","whenToUse":"` + strings.Repeat("x", 2000) + `"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeRecord("a-skill", data)
		if err == nil && checkText(r.Description, r.WhenToUse) != nil {
			t.Fatalf("accepted a record over its bounds")
		}
	})
}
