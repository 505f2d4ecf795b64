package skillstore

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/format.json")

// fixture is the store's format for sample inputs, as this package
// computes it. The TypeScript client's store-format module is tested
// against the same file (events/client/typescript/test/storeformat.test.ts),
// so the two implementations of the format cannot drift apart.
type fixture struct {
	Buckets struct {
		Index   string `json:"index"`
		Objects string `json:"objects"`
	} `json:"buckets"`
	Limits struct {
		MaxFiles      int   `json:"maxFiles"`
		MaxBytes      int64 `json:"maxBytes"`
		MaxObjectSize int64 `json:"maxObjectSize"`
		MaxNameLength int   `json:"maxNameLength"`
		MaxPathLength int   `json:"maxPathLength"`
	} `json:"limits"`
	Names   []nameCase    `json:"names"`
	Keys    []keyCase     `json:"keys"`
	Digests []digestCase  `json:"digests"`
	Paths   []pathCase    `json:"paths"`
	Reject  []archiveCase `json:"rejectArchives"`
}

type nameCase struct {
	Name  string `json:"name"`
	Valid bool   `json:"valid"`
}

type keyCase struct {
	Scope  string `json:"scope"`
	Name   string `json:"name"`
	Key    string `json:"key"`
	Filter string `json:"filter"`
}

type digestCase struct {
	Files        []fileCase `json:"files"`
	Digest       string     `json:"digest"`
	Short        string     `json:"short"`
	Object       string     `json:"object"`
	Archive      string     `json:"archive"` // base64 of the object Archive makes
	ResourceDir  string     `json:"resourceDir"`
	Skill        string     `json:"skill"`
	ResourcePath string     `json:"resourcePath"`
}

type fileCase struct {
	Path string `json:"path"`
	Data string `json:"data"` // base64
}

type pathCase struct {
	Path  string `json:"path"`
	Valid bool   `json:"valid"`
}

// archiveCase is an object Unpack must refuse, and why.
type archiveCase struct {
	Why     string `json:"why"`
	Archive string `json:"archive"` // base64
	Digest  string `json:"digest"`
}

func buildFixture(t *testing.T) fixture {
	t.Helper()
	var fx fixture
	fx.Buckets.Index, fx.Buckets.Objects = DefaultBucket, DefaultObjects
	fx.Limits.MaxFiles, fx.Limits.MaxBytes = DefaultMaxFiles, DefaultMaxBytes
	fx.Limits.MaxObjectSize = Limits{}.MaxObjectSize()
	fx.Limits.MaxNameLength, fx.Limits.MaxPathLength = MaxNameLength, MaxPathLength
	for _, n := range []string{"a", "pdf-tools", "a--b", "-a", "a-", strings.Repeat("x", 64), strings.Repeat("x", 65), "",
		".", "..", "a.b", "a/b", "A", "a*", "a>", "a b", "ü", "global.a", "0-9"} {
		fx.Names = append(fx.Names, nameCase{n, ValidName(n)})
	}
	for _, sc := range []string{"global", "project/team-1", "project/A_b-9"} {
		s, err := ParseScope(sc)
		if err != nil {
			t.Fatal(err)
		}
		fx.Keys = append(fx.Keys, keyCase{sc, "pdf-tools", s.Key("pdf-tools"), s.Filter()})
	}
	for i, files := range [][]File{
		{{Path: "SKILL.md", Data: []byte("---\nname: a\ndescription: A.\n---\nBody.\n")}},
		{{Path: "SKILL.md", Data: []byte("x")}, {Path: "scripts/run.sh", Data: []byte("echo hi\n")}, {Path: "ünï code/é.md", Data: nil}},
		{{Path: ".hidden", Data: []byte{0, 1, 2, 255}}, {Path: "SKILL.md", Data: bytes.Repeat([]byte("long "), 300)},
			{Path: strings.Repeat("d/", 60) + "deep.txt", Data: []byte("deep")}},
	} {
		a := NewArchive()
		var fc []fileCase
		for _, f := range files {
			if err := a.Add(f.Path, f.Data); err != nil {
				t.Fatal(err)
			}
			fc = append(fc, fileCase{f.Path, base64.StdEncoding.EncodeToString(f.Data)})
		}
		obj, digest, err := a.Close()
		if err != nil {
			t.Fatal(err)
		}
		if d, err := Digest(files); err != nil || d != digest {
			t.Fatalf("Digest = %s, %v; the archive's %s", d, err, digest)
		}
		dir := []string{"/res", "/var/lib/skills/", "relative/dir"}[i]
		fx.Digests = append(fx.Digests, digestCase{
			Files: fc, Digest: digest, Short: Short(digest), Object: ObjectName(digest),
			Archive: base64.StdEncoding.EncodeToString(obj), ResourceDir: dir, Skill: "pdf-tools",
			ResourcePath: ResourcePath(dir, "pdf-tools", digest),
		})
	}
	for _, p := range []string{"SKILL.md", "a/b/c.txt", ".gitignore", "ü.md", "a b.md", "", "/abs", "a/../b", "../a", "./a", "a/./b",
		"a//b", "a/", `a\b`, ".git", ".GIT/config", "x/.hg/hgrc", "x/.svn", "a\nb", "a\x1bb", "a\u0085b", "a\x7fb", "a\x00b",
		strings.Repeat("p", 1024), strings.Repeat("p", 1025)} {
		fx.Paths = append(fx.Paths, pathCase{p, CheckPath(p) == nil})
	}
	ok := fx.Digests[0]
	raw, _ := base64.StdEncoding.DecodeString(ok.Archive)
	other := strings.Repeat("0", 64)
	for _, rc := range []archiveCase{
		{Why: "wrong digest", Archive: ok.Archive, Digest: other},
		{Why: "truncated", Archive: base64.StdEncoding.EncodeToString(raw[:300]), Digest: ok.Digest},
		{Why: "empty", Archive: base64.StdEncoding.EncodeToString(make([]byte, 1024)), Digest: ok.Digest},
		{Why: "not an archive", Archive: base64.StdEncoding.EncodeToString([]byte("not a tar")), Digest: ok.Digest},
	} {
		if _, err := Unpack(bytes.NewReader(mustB64(t, rc.Archive)), rc.Digest, Limits{}); err == nil {
			t.Fatalf("%s: Unpack accepted it", rc.Why)
		}
		fx.Reject = append(fx.Reject, rc)
	}
	return fx
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFormatFixture: testdata/format.json is what this package computes
// (go test -run TestFormatFixture -update rewrites it; read the diff), and
// every archive in it unpacks to its files.
func TestFormatFixture(t *testing.T) {
	fx := buildFixture(t)
	got, err := json.MarshalIndent(fx, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	file := filepath.Join("testdata", "format.json")
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what the format computes; run go test -run TestFormatFixture -update and read the diff", file)
	}
	for _, d := range fx.Digests {
		files, err := Unpack(bytes.NewReader(mustB64(t, d.Archive)), d.Digest, Limits{})
		if err != nil || len(files) != len(d.Files) {
			t.Fatalf("Unpack of the fixture's archive %s: %d files, %v", d.Short, len(files), err)
		}
		for i, f := range files {
			if f.Path != d.Files[i].Path || !bytes.Equal(f.Data, mustB64(t, d.Files[i].Data)) {
				t.Errorf("file %d: %q", i, f.Path)
			}
		}
	}
}
