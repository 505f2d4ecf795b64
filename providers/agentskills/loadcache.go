package agentskills

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/skillstream/skillstream/catalog"
)

// loadCacheSize bounds the skills whose parsed body and digest are kept.
// Skill files are at most MaxFileSize, so the cache holds at most
// loadCacheSize MiB and in practice a few hundred KiB.
const loadCacheSize = 1024

// loadCache keeps, per skill file, the last parsed skill and the digest of
// its folder, each valid while the identity (device, inode, size, mtime,
// ctime) of what it was computed from is unchanged. A warm Load then costs
// a stat of the skill's files instead of reading and parsing them.
type loadCache struct {
	mu      sync.Mutex
	bodies  *lru.LRU[string, cachedBody]
	digests *lru.LRU[string, cachedDigest]
}

type cachedBody struct {
	id    identity
	skill catalog.Skill
}

type cachedDigest struct {
	files  []File // paths, sizes and identities it was computed from
	digest string
}

func newLoadCache() *loadCache {
	b, _ := lru.NewLRU[string, cachedBody](loadCacheSize, nil)
	d, _ := lru.NewLRU[string, cachedDigest](loadCacheSize, nil)
	return &loadCache{bodies: b, digests: d}
}

// body returns the cached parse of path when its identity is still id.
func (c *loadCache) body(path string, id identity) (catalog.Skill, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.bodies.Get(path)
	if !ok || b.id != id {
		return catalog.Skill{}, false
	}
	return b.skill, true
}

func (c *loadCache) putBody(path string, id identity, sk catalog.Skill) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bodies.Add(path, cachedBody{id: id, skill: sk})
}

// statFile returns the identity of path (following a final symbolic link
// unless noFollow).
func statFile(path string, noFollow bool) (identity, bool) {
	var fi fs.FileInfo
	var err error
	if noFollow {
		fi, err = os.Lstat(path)
	} else {
		fi, err = os.Stat(path)
	}
	if err != nil || !fi.Mode().IsRegular() {
		return identity{}, false
	}
	return identityOf(fi), true
}

// digest returns the digest of the skill whose file is file: the flat
// file's when flat, else its folder's. It is
// empty when the files cannot be digested (a link leaving the folder, too
// many or too large files): the digest is informative, never a reason to
// refuse a skill.
func (c *loadCache) digest(file string, flat bool) string {
	if flat {
		id, ok := statFile(file, false)
		if !ok {
			return ""
		}
		return c.digestOf("file\x00"+file, []File{{Path: SkillFile, Size: id.size, Source: file, id: id}})
	}
	dir := filepath.Dir(file)
	files, err := Files(dir, Limits{})
	if err != nil {
		return ""
	}
	return c.digestOf("dir\x00"+dir, files)
}

// digestOf returns the digest of files, cached under key while the files
// keep their paths and identities; "" when they cannot be digested.
func (c *loadCache) digestOf(key string, files []File) string {
	if d, ok := c.cachedDigest(key, files); ok {
		return d
	}
	d, err := DigestFiles(files)
	if err != nil {
		return ""
	}
	c.putDigest(key, files, d)
	return d
}

func (c *loadCache) cachedDigest(key string, files []File) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.digests.Get(key)
	if !ok || len(d.files) != len(files) {
		return "", false
	}
	for i, f := range files {
		g := d.files[i]
		if g.Path != f.Path || g.Source != f.Source || g.id != f.id {
			return "", false
		}
	}
	return d.digest, true
}

func (c *loadCache) putDigest(key string, files []File, digest string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.digests.Add(key, cachedDigest{files: files, digest: digest})
}
