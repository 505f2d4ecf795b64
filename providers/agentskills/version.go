package agentskills

import (
	"context"
	"fmt"
	"os"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// Version implements providers.Versioner, from what the provider keeps:
// the winner of a fresh listing (no event since its scan) and the
// identity of its skill file as the listing last found it (inode, size,
// mtime, ctime), which is the Token; for a folder skill, its digest when
// one is kept under a watch of every file and folder of it that reported
// nothing (Digest), or Stale when one reported a change since. The
// watches' queue is read first (one read; a stat of the folder for a
// linked one, as Load's), so a change made before the call is in its
// answer. A provider that does not watch, a listing not fresh, or a
// working directory not remembered give the zero Version.
//
// So a flat-file skill's Token changes with its one file, and a folder
// skill's with its SKILL.md; an edit of another file of a skill folder
// shows as Stale, or in Digest, while the folder's digest is kept watched
// (by Load or Files, within Config.MaxWatchesPerFolder), and is not seen
// otherwise.
func (p *Provider) Version(name string, q catalog.Query) providers.Version {
	if p.w == nil || !catalog.ValidName(name) {
		return providers.Version{}
	}
	if cwd := q.Cwd; cwd != "" {
		p.mu.Lock()
		_, known := p.cwdRoots.Get(cwd)
		p.mu.Unlock()
		if !known {
			return providers.Version{}
		}
	}
	roots, _, err := p.roots(context.Background(), q.Cwd)
	if err != nil {
		return providers.Version{}
	}
	for _, r := range roots {
		r.scanMu.Lock()
		s := r.last
		fresh := s != nil && s.fresh && s.gen == r.gen.Load()
		r.scanMu.Unlock()
		if !fresh {
			return providers.Version{}
		}
		i, ok := s.named[name]
		if !ok {
			continue
		}
		f := s.skills[i]
		st, ok := s.files[f.path]
		if !ok {
			return providers.Version{}
		}
		v := providers.Version{Token: fmt.Sprintf("%s\x00%v", f.path, st.id)}
		if f.dir != r.path { // a folder skill
			var known bool
			if v.Digest, v.Stale, known = p.loads.watched(f.dir, s.vouch); !known {
				return providers.Version{}
			}
		}
		return v
	}
	return providers.Version{}
}

var _ providers.Versioner = (*Provider)(nil)

// watched returns the digest of the skill folder dir when it is kept
// under a watch that reported nothing and the folder's path still names
// the watched directory (see warm, whose checks these are); stale when a
// kept watch reported a change since. known is false when the folder is
// walked on every Load (a digest kept without a watch: links, another
// file system, too many files), so that only a Load can tell; a folder
// whose digest is not kept at all (never read, or given up for the watch
// bound) is known, with neither digest nor stale.
func (c *loadCache) watched(dir string, vouch uint64) (digest string, stale, known bool) {
	if !c.watch.Load() {
		return "", false, false
	}
	ticket := c.treeReads.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tw == nil {
		return "", false, true // nothing read yet, so nothing kept
	}
	c.drainTree(ticket)
	d, ok := c.digests.Peek(folderKey(dir))
	switch {
	case !ok:
		return "", false, true
	case d.tree == nil:
		return "", false, false
	case d.tree.stale:
		return "", true, true
	}
	if vouch == 0 || !d.plain || d.vouched != vouch {
		fi, ok := statFolder(dir)
		if !ok || !d.current(fi) {
			return "", true, true
		}
		d.vouched = vouch
	}
	return d.digest, false, true
}

// readFolder reads the skill folder dir with read (which returns the
// digest of what it read) and, when the folder can be watched as Load
// watches it (see watchFolder) and its files are within the limits Load
// digests under, keeps that digest watched: so a skill whose files were
// read is recognised unchanged (Version) without reading them again, and
// any change to them shows. The folder is walked again once the watches
// are in place, and its files are read from that walk: a folder that
// changed between the walks is read but its digest not kept.
func (c *loadCache) readFolder(dir string, lim Limits, read func([]File) (string, error)) error {
	w, err := walkFolder(dir, lim)
	if err != nil {
		return err
	}
	def := Limits{}.withDefaults()
	if !c.watch.Load() {
		_, err := read(w.files)
		return err
	}
	if w.links != 0 || len(w.files) > def.MaxFiles || w.total > def.MaxBytes || !localFS(w.root) {
		// Load walks such a folder every time: so Version cannot tell.
		c.mu.Lock()
		c.putLocked(folderKey(dir), &cachedDigest{})
		c.mu.Unlock()
		_, err := read(w.files)
		return err
	}
	paths := folderPaths(w)
	c.mu.Lock()
	if c.tw == nil && c.watch.Load() {
		if c.tw, err = newTreeWatch(); err != nil {
			c.watch.Store(false)
		}
	}
	if c.tw == nil || len(paths) > c.maxWatches {
		c.mu.Unlock()
		_, err := read(w.files)
		return err
	}
	// Read the queue as watches come and go (each removed one queues an
	// event): a queue left to overflow would make every kept digest
	// stale.
	c.drainTree(c.treeReads.Load())
	tree, err := c.addWatchesUnlock(paths)
	if err != nil {
		_, err := read(w.files)
		return err
	}
	kept := false
	defer func() {
		if !kept {
			c.releaseTree(tree)
		}
	}()
	root, err := os.Stat(w.root)
	if err != nil {
		return err
	}
	again, err := walkFolder(dir, lim)
	if err != nil {
		return err
	}
	digest, err := read(again.files)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tw == nil {
		return nil
	}
	key := folderKey(dir)
	switch {
	case !oneDevice(root, again.files):
		// Not watched, as Load would not: Version cannot tell.
		c.putLocked(key, &cachedDigest{})
	case !sameTree(w, again) || tree.stale:
		// Changed while read: what was read may be torn. Keep the
		// tree, stale (its watches released), so that Version says so
		// until the folder is read again.
		c.tw.release(tree)
		c.putLocked(key, &cachedDigest{tree: tree})
	default:
		c.putLocked(key, keptDigest(digest, tree, root, w.root == dir, again))
	}
	kept = true
	return nil
}
