package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// The per-skill limits every host must accept: a skill over either is
// not served.
const (
	MaxFiles = 512
	MaxBytes = 16 << 20
)

// errLimit reports a skill over MaxFiles or MaxBytes.
var errLimit = errors.New("over the per-skill limits")

// skillResource is one file of a skill entry's manifest.
type skillResource struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// skillJSON is a skill entry as skills/list and skills/get carry it.
type skillJSON struct {
	URI         string          `json:"uri"`
	Frontmatter json.RawMessage `json:"frontmatter"`
	Resources   []skillResource `json:"resources"`
}

// fileMeta is what the server knows of one served file.
type fileMeta struct {
	path   string
	size   int64
	sha    string // "sha256:" + hex
	mime   string
	binary bool
}

// entry is one served skill.
type entry struct {
	name        string
	description string
	digest      string // the skill's digest over its files (version key)
	json        json.RawMessage
	files       map[string]*fileMeta
	dirs        map[string][]child // direct children by directory ("" = root)
}

// child is a direct child of a skill directory.
type child struct {
	name string
	file *fileMeta // nil for a subdirectory
}

// state is what the server serves at one moment: the skills by name.
type state struct {
	skills []*entry // by name in byte order
	byName map[string]*entry
	tool   string // the skill tool's description
	res    string // resourcesKey(skills)
}

func (st *state) find(name string) *entry {
	if st == nil {
		return nil
	}
	return st.byName[name]
}

// after returns the index of the first skill whose name sorts after name.
func (st *state) after(name string) int {
	return sort.Search(len(st.skills), func(i int) bool { return st.skills[i].name > name })
}

// newEntry builds the entry of a skill from its files. The files must
// hold SKILL.md; name must be its frontmatter's name.
func newEntry(name string, files []providers.File) (*entry, error) {
	if len(files) > MaxFiles {
		return nil, fmt.Errorf("%d files, over %d: %w", len(files), MaxFiles, errLimit)
	}
	var total int64
	for _, f := range files {
		total += int64(len(f.Data))
	}
	if total > MaxBytes {
		return nil, fmt.Errorf("%d bytes, over %d: %w", total, MaxBytes, errLimit)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	e := &entry{name: name, files: make(map[string]*fileMeta, len(files)), dirs: map[string][]child{}}
	h := skillstore.NewHasher()
	var skillMD []byte
	res := make([]skillResource, 0, len(files))
	dirSeen := map[string]bool{"": true}
	for _, f := range files {
		if !validPath(f.Path) {
			return nil, fmt.Errorf("file path %q cannot be served", f.Path)
		}
		if err := h.Add(f.Path, int64(len(f.Data)), bytes.NewReader(f.Data)); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(f.Data)
		m := &fileMeta{path: f.Path, size: int64(len(f.Data)), sha: "sha256:" + hex.EncodeToString(sum[:])}
		m.mime, m.binary = mimeOf(f.Path, f.Data)
		e.files[f.Path] = m
		if f.Path == agentskills.SkillFile {
			skillMD = f.Data
			m.mime = "text/markdown"
		}
		res = append(res, skillResource{URI: fileURI(name, f.Path), Digest: m.sha, Size: m.size})
		// Register the file with its directory, and every directory on
		// its way with its parent.
		d := dirOf(f.Path)
		e.dirs[d] = append(e.dirs[d], child{name: path.Base(f.Path), file: m})
		for d != "" && !dirSeen[d] {
			dirSeen[d] = true
			p := dirOf(d)
			e.dirs[p] = append(e.dirs[p], child{name: path.Base(d)})
			d = p
		}
	}
	if skillMD == nil {
		return nil, fmt.Errorf("no %s", agentskills.SkillFile)
	}
	front, err := agentskills.Frontmatter(skillMD)
	if err != nil {
		return nil, err
	}
	fm, err := frontmatterJSON(front)
	if err != nil {
		return nil, err
	}
	var head struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal(fm, &head); err != nil || head.Name != name {
		return nil, fmt.Errorf("frontmatter name is not %q", name)
	}
	e.description = head.Description
	for d := range e.dirs {
		sort.Slice(e.dirs[d], func(i, j int) bool { return e.dirs[d][i].name < e.dirs[d][j].name })
	}
	e.digest = h.Sum()
	// Move SKILL.md first: hosts look for it there (the rest stay in path order).
	for i, r := range res {
		if r.URI == fileURI(name, agentskills.SkillFile) {
			copy(res[1:i+1], res[:i])
			res[0] = r
			break
		}
	}
	e.json, err = json.Marshal(skillJSON{URI: fileURI(name, agentskills.SkillFile), Frontmatter: fm, Resources: res})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// skillDigest is the digest of a skill's files (its version key).
func skillDigest(files []providers.File) (string, error) {
	sorted := append([]providers.File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	h := skillstore.NewHasher()
	for _, f := range sorted {
		if err := h.Add(f.Path, int64(len(f.Data)), bytes.NewReader(f.Data)); err != nil {
			return "", err
		}
	}
	return h.Sum(), nil
}

// dirOf is the directory of a "/"-separated relative path ("" for the
// root). Unlike path.Dir it never answers ".".
func dirOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}

// validPath reports whether a provider's file path can be served as is:
// relative, clean, "/"-separated, no empty, "." or ".." segment, no
// backslash, NUL or other control character.
func validPath(p string) bool {
	if p == "" || len(p) > maxURI || !utf8.ValidString(p) {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return false
		}
	}
	return true
}

// mimeTypes maps file extensions to media types. It is fixed here rather
// than taken from the host's mime tables so every server answers alike.
var mimeTypes = map[string]string{
	".md": "text/markdown", ".markdown": "text/markdown", ".txt": "text/plain",
	".json": "application/json", ".yaml": "application/yaml", ".yml": "application/yaml",
	".toml": "application/toml", ".xml": "application/xml", ".csv": "text/csv",
	".html": "text/html", ".htm": "text/html", ".css": "text/css",
	".js": "text/javascript", ".mjs": "text/javascript", ".ts": "text/x-typescript",
	".py": "text/x-python", ".sh": "text/x-shellscript", ".go": "text/x-go",
	".rb": "text/x-ruby", ".sql": "application/sql",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".svg": "image/svg+xml", ".pdf": "application/pdf",
	".zip": "application/zip", ".gz": "application/gzip", ".tar": "application/x-tar",
}

// mimeOf returns a file's media type and whether it is served as a blob
// (its bytes are not UTF-8 text).
func mimeOf(p string, data []byte) (string, bool) {
	binary := !utf8.Valid(data)
	if t, ok := mimeTypes[strings.ToLower(path.Ext(p))]; ok {
		return t, binary
	}
	if binary {
		return "application/octet-stream", true
	}
	return "text/plain", false
}

// skillFiles is what the server needs from the registry for one skill.
type skillFiles interface {
	Files(ctx context.Context, name string, q catalog.Query, maxFiles int, maxBytes int64) ([]providers.File, error)
}
