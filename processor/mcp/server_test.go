package mcp_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/natstest"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// readFile reads a resource and returns its bytes, decoding text or blob,
// and the raw contents object.
func (f *fixture) read(t *testing.T, uri string) ([]byte, map[string]json.RawMessage) {
	t.Helper()
	res, rerr := f.rpc(t, "resources/read", map[string]any{"uri": uri})
	if rerr != nil {
		t.Fatalf("resources/read %s: %+v", uri, rerr)
	}
	var rr struct {
		ResultType string                       `json:"resultType"`
		Contents   []map[string]json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(res, &rr); err != nil || len(rr.Contents) != 1 || rr.ResultType != "complete" {
		t.Fatalf("resources/read %s: %s", uri, res)
	}
	c := rr.Contents[0]
	if t1, ok := c["text"]; ok {
		var s string
		json.Unmarshal(t1, &s)
		return []byte(s), c
	}
	var b64 string
	if err := json.Unmarshal(c["blob"], &b64); err != nil {
		t.Fatalf("resources/read %s: neither text nor blob: %s", uri, res)
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	return data, c
}

var binaryBytes = string([]byte{0x89, 'P', 'N', 'G', 0, 0xff, 0xfe, 0x80, 0x00, 0x01})

// TestFolderAndStoreSkills: entries, manifests and reads of a folder skill
// (nested folders, a binary and an empty file) and of a store skill; every
// digest recomputed here from the bytes on disk.
func TestFolderAndStoreSkills(t *testing.T) {
	f := newFixture(t, fixtureOpts{store: true})
	alpha := map[string]string{
		"SKILL.md":               skillMD("alpha", "Alpha skill.", "Read refs/guide.md."),
		"refs/guide.md":          "Guide.\n",
		"refs/deep/notes.txt":    "notes",
		"assets/logo.png":        binaryBytes,
		"assets/empty.txt":       "",
		"scripts/run.sh":         "#!/bin/sh\necho hi\n",
		"refs/deep/more/last.md": "last",
	}
	writeSkill(t, f.root, "alpha", alpha)
	storeDir := t.TempDir()
	gamma := map[string]string{"SKILL.md": skillMD("gamma", "Gamma from the store.", "Gamma."), "data/table.csv": "a,b\n1,2\n"}
	f.push(t, writeSkill(t, storeDir, "gamma", gamma))
	f.waitFor(t, "alpha", "gamma")
	es := f.listAll(t)
	for name, files := range map[string]map[string]string{"alpha": alpha, "gamma": gamma} {
		e, err := find(es, name)
		if err != nil {
			t.Fatal(err)
		}
		if e.Frontmatter["name"] != name {
			t.Errorf("%s: frontmatter %v", name, e.Frontmatter)
		}
		if len(e.Resources) != len(files) {
			t.Errorf("%s: %d resources, want %d", name, len(e.Resources), len(files))
		}
		if e.Resources[0].URI != e.URI {
			t.Errorf("%s: first resource %s, want SKILL.md", name, e.Resources[0].URI)
		}
		for _, r := range e.Resources {
			p := strings.TrimPrefix(r.URI, "skill://"+name+"/")
			want, ok := files[p]
			if !ok {
				t.Errorf("%s: unexpected resource %s", name, r.URI)
				continue
			}
			if r.Digest != sha([]byte(want)) || r.Size != int64(len(want)) {
				t.Errorf("%s: %s digest %s size %d, want %s %d", name, p, r.Digest, r.Size, sha([]byte(want)), len(want))
			}
			got, c := f.read(t, r.URI)
			if string(got) != want {
				t.Errorf("read %s: %q, want %q", r.URI, got, want)
			}
			if p == "assets/logo.png" {
				if _, ok := c["blob"]; !ok {
					t.Errorf("binary file served as text: %v", c)
				}
			}
			if p == "assets/empty.txt" && string(c["text"]) != `""` {
				t.Errorf("empty file: contents %v, want text \"\"", c)
			}
			if p == "SKILL.md" && string(c["mimeType"]) != `"text/markdown"` {
				t.Errorf("SKILL.md mimeType %s", c["mimeType"])
			}
		}
		// skills/get gives the same entry.
		res, rerr := f.rpc(t, "skills/get", map[string]any{"uri": e.URI})
		if rerr != nil {
			t.Fatalf("skills/get: %+v", rerr)
		}
		var gr struct {
			ResultType string          `json:"resultType"`
			Skill      json.RawMessage `json:"skill"`
			NextCursor *string         `json:"nextCursor"`
			TTLMs      *int            `json:"ttlMs"`
			CacheScope string          `json:"cacheScope"`
		}
		json.Unmarshal(res, &gr)
		var ge entry
		json.Unmarshal(gr.Skill, &ge)
		if !reflect.DeepEqual(ge, e) || gr.ResultType != "complete" || gr.NextCursor != nil || gr.TTLMs == nil || gr.CacheScope == "" {
			t.Errorf("skills/get %s: %s", e.URI, res)
		}
	}

	// Directories: the root, a nested one; files carry their metadata.
	dirs := map[string][]string{
		"skill://alpha":           {"SKILL.md", "assets", "refs", "scripts"},
		"skill://alpha/refs":      {"deep", "guide.md"},
		"skill://alpha/refs/deep": {"more", "notes.txt"},
	}
	for uri, want := range dirs {
		res, rerr := f.rpc(t, "resources/directory/read", map[string]any{"uri": uri})
		if rerr != nil {
			t.Fatalf("directory %s: %+v", uri, rerr)
		}
		var dr struct {
			Resources []struct{ URI, Name, MIMEType string } `json:"resources"`
		}
		json.Unmarshal(res, &dr)
		var got []string
		for _, r := range dr.Resources {
			got = append(got, r.Name)
			isDir := r.MIMEType == "inode/directory"
			if isDir != !strings.Contains(r.Name, ".") || r.URI != uri+"/"+r.Name {
				t.Errorf("directory %s: child %+v", uri, r)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("directory %s: %v, want %v", uri, got, want)
		}
	}

	// resources/list: one SKILL.md per skill, named and described.
	res, rerr := f.rpc(t, "resources/list", map[string]any{})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var rl struct {
		Resources []struct{ URI, Name, Description, MIMEType string } `json:"resources"`
	}
	json.Unmarshal(res, &rl)
	got := map[string]string{}
	for _, r := range rl.Resources {
		got[r.URI] = r.Name + "|" + r.Description + "|" + r.MIMEType
	}
	want := map[string]string{
		"skill://alpha/SKILL.md": "alpha|Alpha skill.|text/markdown",
		"skill://gamma/SKILL.md": "gamma|Gamma from the store.|text/markdown",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resources/list: %v, want %v", got, want)
	}
}

// TestPagination1000 pages through 1,000 skills: every one once, in name
// order, no entry split; a cursor the server did not issue is refused.
func TestPagination1000(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	var names []string
	for i := range 1000 {
		n := "skill-" + strconv.Itoa(i)
		names = append(names, n)
		writeSkill(t, f.root, n, map[string]string{"SKILL.md": skillMD(n, "Skill number "+strconv.Itoa(i)+".", "Body.")})
	}
	sort.Strings(names)
	f.waitFor(t, names...)
	es := f.listAll(t)
	if len(es) != 1000 {
		t.Fatalf("%d skills listed, want 1000", len(es))
	}
	for i, e := range es {
		if e.URI != "skill://"+names[i]+"/SKILL.md" {
			t.Fatalf("entry %d is %s, want %s", i, e.URI, names[i])
		}
	}
	res, _ := f.rpc(t, "skills/list", map[string]any{})
	var first listResult
	json.Unmarshal(res, &first)
	if len(first.Skills) != 100 || first.NextCursor == "" {
		t.Fatalf("first page: %d skills, cursor %q", len(first.Skills), first.NextCursor)
	}
	forged := []string{
		"", "x", strings.Repeat("A", 100000), first.NextCursor + "x",
		"c2tpbGwtOTk.AAAAAAAAAAAAAAAAAAAAAA", strings.Replace(first.NextCursor, ".", "x.", 1),
	}
	for _, c := range forged {
		_, rerr := f.rpc(t, "skills/list", map[string]any{"cursor": c})
		if rerr == nil || rerr.Code != -32602 {
			t.Errorf("cursor %.40q: %+v, want -32602", c, rerr)
		}
	}
}

// TestFrontmatterVerbatim: nested maps, lists, numbers, booleans, null,
// dates and unknown keys come through as written, in the author's order.
func TestFrontmatterVerbatim(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	front := `name: verbatim
description: "Quoted: description with # and : inside"
license: MIT
allowed-tools: [Read, "Bash(git:*)"]
metadata:
  version: "2.0"
  build: 42
  ratio: 0.25
  big: 12345678901234567890
  enabled: true
  off: no
  nothing: null
  released: 2024-05-01
  nested:
    list:
      - a
      - {k: v}
      - [1, 2]
x-unknown-key: kept
when_to_use: |
  Multi-line
  text.`
	writeSkill(t, f.root, "verbatim", map[string]string{"SKILL.md": "---\n" + front + "\n---\nBody.\n"})
	f.waitFor(t, "verbatim")
	res, rerr := f.rpc(t, "skills/get", map[string]any{"uri": "skill://verbatim/SKILL.md"})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var gr struct {
		Skill struct {
			Frontmatter json.RawMessage `json:"frontmatter"`
		} `json:"skill"`
	}
	json.Unmarshal(res, &gr)
	want := `{"name":"verbatim","description":"Quoted: description with # and : inside","license":"MIT","allowed-tools":["Read","Bash(git:*)"],` +
		`"metadata":{"version":"2.0","build":42,"ratio":0.25,"big":"12345678901234567890","enabled":true,"off":"no","nothing":null,"released":"2024-05-01",` +
		`"nested":{"list":["a",{"k":"v"},[1,2]]}},"x-unknown-key":"kept","when_to_use":"Multi-line\ntext.\n"}`
	if string(gr.Skill.Frontmatter) != want {
		t.Errorf("frontmatter\n got %s\nwant %s", gr.Skill.Frontmatter, want)
	}
}

// TestHostileInputs: traversal, encodings, NUL, absolute paths, huge and
// mistyped params are -32602, and nothing is read for them.
func TestHostileInputs(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	writeSkill(t, f.root, "alpha", map[string]string{"SKILL.md": skillMD("alpha", "Alpha.", "A."), "refs/guide.md": "g"})
	writeSkill(t, f.root, "beta", map[string]string{"SKILL.md": skillMD("beta", "Beta.", "B.")})
	secret := filepath.Join(filepath.Dir(f.root), "secret.txt")
	os.WriteFile(secret, []byte("secret"), 0o600)
	f.waitFor(t, "alpha", "beta")
	uris := []string{
		"skill://alpha/../beta/SKILL.md", "skill://alpha/refs/../SKILL.md", "skill://alpha/%2e%2e/beta/SKILL.md",
		"skill://alpha/refs%2fguide.md", "skill://alpha/%2E%2E%2F%2E%2E%2Fsecret.txt", "skill://alpha\\SKILL.md",
		"skill://alpha/refs\\guide.md", "skill://alpha/SKILL.md\x00", "skill://alpha/\x00", "skill://alp\x00ha/SKILL.md",
		"/etc/passwd", secret, "file://" + secret, "skill:///etc/passwd", "skill://alpha//SKILL.md",
		"skill://alpha/./SKILL.md", "skill://alpha/SKILL.md/", "skill://ALPHA/SKILL.md", "skill://alpha/refs/",
		"skill://../SKILL.md", "skill://alpha/" + strings.Repeat("a/", 5000) + "x", "", "skill://", "skill://alpha/missing.md",
		"SKILL://alpha/SKILL.md", " skill://alpha/SKILL.md",
	}
	before := f.reg.files.Load()
	for _, u := range uris {
		for _, m := range []string{"resources/read", "skills/get", "resources/directory/read"} {
			_, rerr := f.rpc(t, m, map[string]any{"uri": u})
			if rerr == nil || rerr.Code != -32602 {
				t.Errorf("%s %q: %+v, want -32602", m, u, rerr)
			}
		}
	}
	// Wrong types and shapes.
	for _, p := range []string{`{"uri":5}`, `{"uri":null}`, `{"uri":["skill://alpha/SKILL.md"]}`, `{}`, `"skill://alpha/SKILL.md"`, `[1]`, `{"uri":{"a":1}}`} {
		for _, m := range []string{"resources/read", "skills/get", "resources/directory/read"} {
			_, rerr := f.rpc(t, m, json.RawMessage(p))
			if rerr == nil || rerr.Code != -32602 {
				t.Errorf("%s params %s: %+v, want -32602", m, p, rerr)
			}
		}
	}
	for _, p := range []string{`{"cursor":5}`, `{"cursor":{"x":1}}`, `"x"`} {
		_, rerr := f.rpc(t, "skills/list", json.RawMessage(p))
		if rerr == nil || rerr.Code != -32602 {
			t.Errorf("skills/list params %s: %+v, want -32602", p, rerr)
		}
	}
	if _, rerr := f.rpc(t, "resources/directory/read", map[string]any{"uri": "skill://alpha", "cursor": "c"}); rerr == nil || rerr.Code != -32602 {
		t.Errorf("directory read with a foreign cursor: %+v", rerr)
	}
	if n := f.reg.files.Load() - before; n != 0 {
		t.Errorf("%d file reads for refused requests, want none", n)
	}
	// A directory URI is no file, and a file no directory.
	if _, rerr := f.rpc(t, "resources/read", map[string]any{"uri": "skill://alpha/refs"}); rerr == nil || rerr.Code != -32602 {
		t.Errorf("read of a directory: %+v", rerr)
	}
	if _, rerr := f.rpc(t, "resources/directory/read", map[string]any{"uri": "skill://alpha/SKILL.md"}); rerr == nil || rerr.Code != -32602 {
		t.Errorf("directory read of a file: %+v", rerr)
	}
	// nil params of the extension's methods.
	if _, rerr := f.rpc(t, "skills/list", nil); rerr != nil {
		t.Errorf("skills/list without params: %+v", rerr)
	}
	if _, rerr := f.rpc(t, "skills/get", nil); rerr == nil || rerr.Code != -32602 {
		t.Errorf("skills/get without params: %+v", rerr)
	}
}

// TestLimits: a skill over 512 files or 16 MiB is not served; one at the
// limits is.
func TestLimits(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	many := map[string]string{"SKILL.md": skillMD("many-files", "Too many files.", "M.")}
	exact := map[string]string{"SKILL.md": skillMD("exact-files", "Exactly 512 files.", "E.")}
	for i := range 512 {
		many["f/"+strconv.Itoa(i)] = "x"
		if i < 511 {
			exact["f/"+strconv.Itoa(i)] = "x"
		}
	}
	writeSkill(t, f.root, "many-files", many)
	writeSkill(t, f.root, "exact-files", exact)
	big := skillMD("big-files", "Too large.", "B.")
	writeSkill(t, f.root, "big-files", map[string]string{"SKILL.md": big, "blob.bin": strings.Repeat("b", 16<<20-len(big)+1)})
	writeSkill(t, f.root, "ok", map[string]string{"SKILL.md": skillMD("ok", "Fine.", "O.")})
	f.waitFor(t, "ok", "exact-files")
	es := f.listAll(t)
	for _, n := range []string{"many-files", "big-files"} {
		if _, err := find(es, n); err == nil {
			t.Errorf("%s is served", n)
		}
		if _, rerr := f.rpc(t, "skills/get", map[string]any{"uri": "skill://" + n + "/SKILL.md"}); rerr == nil || rerr.Code != -32602 {
			t.Errorf("skills/get %s: %+v", n, rerr)
		}
	}
	e, _ := find(es, "exact-files")
	if len(e.Resources) != 512 {
		t.Errorf("exact-files: %d resources", len(e.Resources))
	}
}

// TestReadsShareOneFetch: reading every file of a skill reads its files
// from the provider once, and a changed skill is read anew.
func TestReadsShareOneFetch(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	files := map[string]string{"SKILL.md": skillMD("multi", "Many files.", "M.")}
	for i := range 20 {
		files["f/"+strconv.Itoa(i)+".txt"] = "file " + strconv.Itoa(i)
	}
	dir := writeSkill(t, f.root, "multi", files)
	f.waitFor(t, "multi")
	before := f.reg.files.Load()
	for p, want := range files {
		if got, _ := f.read(t, "skill://multi/"+p); string(got) != want {
			t.Errorf("%s: %q", p, got)
		}
	}
	if n := f.reg.files.Load() - before; n != 1 {
		t.Errorf("%d file reads for %d resources, want 1", n, len(files))
	}
	os.WriteFile(filepath.Join(dir, "f", "0.txt"), []byte("changed"), 0o644)
	natstest.Eventually(t, 20*time.Second, "changed file served", func() error {
		f.sync(t)
		if got, _ := f.read(t, "skill://multi/f/0.txt"); string(got) != "changed" {
			return fmt.Errorf("read %q", got)
		}
		e, err := find(f.listAll(t), "multi")
		if err != nil {
			return err
		}
		for _, r := range e.Resources {
			if r.URI == "skill://multi/f/0.txt" && r.Digest != sha([]byte("changed")) {
				return fmt.Errorf("manifest digest %s", r.Digest)
			}
		}
		return nil
	})
}
