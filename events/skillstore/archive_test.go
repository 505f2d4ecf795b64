package skillstore

import (
	"archive/tar"
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestUnpackRefusesHostileArchives(t *testing.T) {
	lim := Limits{MaxFiles: 10, MaxBytes: 100}
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
		if _, err := Unpack(bytes.NewReader(arc), "0000000000000000000000000000000000000000000000000000000000000000", lim); !errors.Is(err, ErrBadArchive) {
			t.Errorf("%s: unpack = %v, want ErrBadArchive", name, err)
		}
	}
	ok := build(tar.Header{Name: "SKILL.md", Size: 3})
	if _, err := Unpack(bytes.NewReader(ok), "0000000000000000000000000000000000000000000000000000000000000000", lim); err == nil {
		t.Error("an archive with the wrong digest was accepted")
	}
}

// Archives holding a version control folder (git runs the commands a
// .git/config names, in any folder below it) or names with control
// characters are refused when unpacked, whatever their digest says.
func TestUnpackRefusesVCSAndControlCharacters(t *testing.T) {
	lim := Limits{MaxFiles: 10, MaxBytes: 1000}
	for name, tc := range map[string]struct{ path, want string }{
		"git config":     {".git/config", "version control"},
		"nested git":     {"sub/.git/hooks/post-checkout", "version control"},
		"upper git":      {".GIT/config", "version control"},
		"hg":             {".hg/hgrc", "version control"},
		"svn":            {"x/.svn/entries", "version control"},
		"newline":        {"notes\nREADME.md", "control character"},
		"escape":         {"\x1b[31mred.md", "control character"},
		"c1 control":     {"a\u0085b", "control character"},
		"delete":         {"a\x7fb", "control character"},
		"git as a file":  {".git", "version control"},
		"gitignore fine": {".gitignore", ""},
	} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		h := NewHasher()
		body := []byte("[core]\n\tfsmonitor = touch /tmp/pwned\n")
		paths := []string{"SKILL.md", tc.path}
		if tc.path < "SKILL.md" {
			paths = []string{tc.path, "SKILL.md"}
		}
		for _, p := range paths {
			tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Size: int64(len(body)), Format: tar.FormatPAX})
			tw.Write(body)
			h.Add(p, int64(len(body)), bytes.NewReader(body))
		}
		tw.Close()
		_, err := Unpack(bytes.NewReader(buf.Bytes()), h.Sum(), lim)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadArchive) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: unpack = %v, want ErrBadArchive (%s)", name, err, tc.want)
		}
	}
}

// FuzzUnpack: whatever the bytes, unpack returns an error or files whose
// paths are clean, relative, outside version control folders and free of
// control characters, within the limits.
func FuzzUnpack(f *testing.F) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "SKILL.md", Size: 3, Format: tar.FormatPAX})
	tw.Write([]byte("abc"))
	tw.Close()
	f.Add(buf.Bytes(), "")
	f.Add([]byte("not a tar"), "")
	f.Fuzz(func(t *testing.T, data []byte, digest string) {
		lim := Limits{MaxFiles: 8, MaxBytes: 4096}
		h := NewHasher()
		files, err := Unpack(bytes.NewReader(data), digest, lim)
		if err != nil {
			return
		}
		if len(files) > lim.MaxFiles {
			t.Fatalf("%d files", len(files))
		}
		for _, fd := range files {
			if err := CheckPath(fd.Path); err != nil {
				t.Fatalf("accepted %q: %v", fd.Path, err)
			}
			h.Add(fd.Path, int64(len(fd.Data)), bytes.NewReader(fd.Data))
		}
		if h.Sum() != digest {
			t.Fatal("accepted files that do not hash to the digest")
		}
	})
}
