package store

import (
	"archive/tar"
	"bytes"
	"errors"
	"testing"

	"github.com/skillstream/skillstream/providers/agentskills"
)

func TestUnpackRefusesHostileArchives(t *testing.T) {
	lim := agentskills.Limits{MaxFiles: 10, MaxBytes: 100}
	build := func(entries ...tar.Header) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range entries {
			h := h
			if h.Typeflag == 0 {
				h.Typeflag = tar.TypeReg
			}
			tw.WriteHeader(&h)
			if h.Typeflag == tar.TypeReg {
				tw.Write(make([]byte, h.Size))
			}
		}
		tw.Close()
		return buf.Bytes()
	}
	for name, arc := range map[string][]byte{
		"parent":   build(tar.Header{Name: "../evil", Size: 1}),
		"nested":   build(tar.Header{Name: "a/../../evil", Size: 1}),
		"absolute": build(tar.Header{Name: "/etc/evil", Size: 1}),
		"symlink":  build(tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}),
		"too big":  build(tar.Header{Name: "SKILL.md", Size: 101}),
		"too many": build(tar.Header{Name: "a", Size: 1}, tar.Header{Name: "b", Size: 1}, tar.Header{Name: "c", Size: 1},
			tar.Header{Name: "d", Size: 1}, tar.Header{Name: "e", Size: 1}, tar.Header{Name: "f", Size: 1}, tar.Header{Name: "g", Size: 1},
			tar.Header{Name: "h", Size: 1}, tar.Header{Name: "i", Size: 1}, tar.Header{Name: "j", Size: 1}, tar.Header{Name: "k", Size: 1}),
		"unordered": build(tar.Header{Name: "b", Size: 1}, tar.Header{Name: "a", Size: 1}),
		"empty":     build(),
	} {
		if _, err := unpack(bytes.NewReader(arc), "0000000000000000000000000000000000000000000000000000000000000000", lim); !errors.Is(err, ErrBadArchive) {
			t.Errorf("%s: unpack = %v, want ErrBadArchive", name, err)
		}
	}
	ok := build(tar.Header{Name: "SKILL.md", Size: 3})
	if _, err := unpack(bytes.NewReader(ok), "0000000000000000000000000000000000000000000000000000000000000000", lim); err == nil {
		t.Error("an archive with the wrong digest was accepted")
	}
}
