package agentskills

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/skillstream/skillstream/catalog"
)

// loadCacheSize bounds the skills whose parsed body and digest are kept.
// Skill files are at most MaxFileSize, so the cache holds at most
// loadCacheSize MiB and in practice a few hundred KiB.
const loadCacheSize = 1024

// loadCache keeps what Load computed, per skill, for the next Load.
//
// The parsed body of a skill file is kept while the file's identity
// (device, inode, size, mtime, ctime) is unchanged: one stat.
//
// The digest of a flat-file skill is kept the same way, with the file's
// identity from that stat.
//
// The digest of a skill folder is watched when it can be: every folder and
// every file of the skill folder gets an inotify watch (treewatch_linux.go),
// and the digest is served while no event was reported on any of them and
// the folder's path still names the same directory: one read of the event
// queue, which finds it empty, and for a folder whose path holds a link or
// whose root is not watched all the way up, a stat of the folder (device
// and inode); other folders' paths are vouched for by the listing's
// watches (see warm).
// The queue is read before the digest is served, and the kernel queues an
// event before the call that made the change returns, so a change made
// before the Load began (any file or subfolder edited, added, removed,
// renamed, even through a hard link from elsewhere; the folder replaced or
// renamed) is always reflected in its digest. The watches are in place
// before the files are read, so what changes while a digest is computed
// makes it stale at once.
//
// A folder is walked instead (a readdir of every folder and a stat of every
// file on each Load, the digest kept while the paths and identities of the
// files are unchanged) when:
//   - watching is off (Config.NoWatch) or unavailable (not Linux, no inotify
//     instance to be had);
//   - it holds a symbolic link: what a link names may change with folders
//     outside the skill, which nobody watches (the folder itself may be a
//     link: its target is what is watched, and re-checked by the stat);
//   - it lies on a network or FUSE file system, whose changes made by
//     another machine are not reported, or spans several file systems;
//   - its watches do not fit in Config.MaxWatchesPerFolder, which bounds
//     the watches of all kept digests together (the least recently used
//     digests give theirs up first), or the kernel refuses one.
//
// A folder that changes while its digest is computed is digested but not
// kept; the next Load tries again.
type loadCache struct {
	mu      sync.Mutex
	bodies  *lru.LRU[string, cachedBody]
	digests *lru.LRU[string, *cachedDigest]
	// watch tells whether folder digests may be watched (false once
	// closed, or when no inotify instance could be had); tw is started at
	// the first folder digest, and is nil again once closed.
	watch      atomic.Bool
	maxWatches int
	tw         *treeWatch

	walks atomic.Uint64 // skill folders walked for their digest
	// treeReads counts the reads of tw's queue begun (with mu held,
	// before the read); see drainTree.
	treeReads atomic.Uint64
}

// drainTree reads tw's queue (c.mu held, tw not nil) unless a read began
// since the caller took ticket (c.treeReads.Load() once its call had
// begun): that read took every event queued before the call began, and
// marked the trees they concern before c.mu was released. Concurrent
// Loads thus share one system call.
func (c *loadCache) drainTree(ticket uint64) {
	if c.treeReads.Load() != ticket {
		return
	}
	c.treeReads.Add(1)
	c.tw.drain()
}

type cachedBody struct {
	id    identity
	skill catalog.Skill
}

// cachedDigest is a kept digest: watched (tree set) or validated by the
// identities of the files it was computed from.
type cachedDigest struct {
	digest string
	tree   *watchedTree
	inode  [2]uint64 // watched: the directory the folder's path named
	plain  bool      // watched: the folder's path held no symbolic link
	// vouched is the scan (rootScan.vouch) under which the path was last
	// found to name the watched directory, c.mu held.
	vouched uint64
	skill   identity // watched: the skill file as the digest found it
	files   []File   // not watched: paths, sizes and identities
}

func newLoadCache(watch bool, maxWatches int) *loadCache {
	c := &loadCache{maxWatches: maxWatches}
	c.watch.Store(watch)
	c.bodies, _ = lru.NewLRU[string, cachedBody](loadCacheSize, nil)
	// Evictions happen inside LRU calls, which are made with c.mu held.
	c.digests, _ = lru.NewLRU(loadCacheSize, func(_ string, d *cachedDigest) { c.unwatch(d) })
	return c
}

// unwatch releases d's watches. c.mu must be held.
func (c *loadCache) unwatch(d *cachedDigest) {
	if d.tree != nil && c.tw != nil {
		c.tw.release(d.tree)
	}
}

// close releases every watch; later digests are walked.
func (c *loadCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch.Store(false)
	if c.tw != nil {
		c.digests.Purge()
		c.tw.close()
		c.tw = nil
	}
}

// stats counts the folder walks and the watches held, for Stats.
func (c *loadCache) stats() (walks uint64, watches int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tw != nil {
		watches = c.tw.held()
	}
	return c.walks.Load(), watches
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

// warm returns the kept body and digest of the folder skill dir whose skill
// file is file without a stat of that file, when both are known to be
// current: the folder's digest is watched and no event came since (an edit
// of the skill file, or its replacement, is one), the folder's path still
// names the watched directory, and the body kept was parsed from the file
// the watched digest was computed from. Otherwise ok is false and Load
// takes the usual way.
//
// Whether the path still names the watched directory costs a stat of the
// folder, once per scan of its root: vouch (not 0) identifies a scan that
// vouches for its paths (rootScan.vouch: fresh, its listing's events read
// in this operation, every folder above the root watched), and a folder
// whose path held no link when its watch was taken, stat'ed under that
// same scan, is not stat'ed again under it. Nothing can make the path name
// another folder without an event: the folder moved or removed is one on
// its own watch; a folder above it moved (so that another may take its
// place) is one on the root's, which ends the scan.
func (c *loadCache) warm(file, dir string, vouch uint64) (sk catalog.Skill, digest string, ok bool) {
	if !c.watch.Load() {
		return catalog.Skill{}, "", false
	}
	ticket := c.treeReads.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tw == nil {
		return catalog.Skill{}, "", false
	}
	c.drainTree(ticket)
	d, ok := c.digests.Get(folderKey(dir))
	if !ok || d.tree == nil || d.tree.stale {
		return catalog.Skill{}, "", false
	}
	if vouch == 0 || !d.plain || d.vouched != vouch {
		// Once per scan (always for a linked folder): stat with c.mu
		// held rather than look the digest up twice.
		fi, ok := statFolder(dir)
		if !ok || !d.current(fi) {
			return catalog.Skill{}, "", false
		}
		d.vouched = vouch
	}
	b, ok := c.bodies.Get(file)
	if !ok || b.id != d.skill {
		return catalog.Skill{}, "", false
	}
	return b.skill, d.digest, true
}

// folderKey is the key of a skill folder's digest in loadCache.digests.
func folderKey(dir string) string { return "dir\x00" + dir }

// statFolder stats a skill folder; ok is false when it is not one.
func statFolder(dir string) (fs.FileInfo, bool) {
	fi, err := os.Stat(dir)
	return fi, err == nil && fi.IsDir()
}

// current reports whether d is a watched digest that is still good: no
// event was reported on its watches (the queue drained first, c.mu held)
// and the folder's path, stat'ed as fi, still names the watched directory.
func (d *cachedDigest) current(fi fs.FileInfo) bool {
	return d.tree != nil && !d.tree.stale && d.inode == inodeOf(fi)
}

// digest returns the digest of the skill whose file is file, of identity
// id: the flat file's when flat, else its folder's. It is empty when the
// files cannot be digested (a link leaving the folder, too many or too
// large files): the digest is informative, never a reason to refuse a
// skill.
func (c *loadCache) digest(file string, id identity, flat bool) string {
	if flat {
		files := []File{{Path: SkillFile, Size: id.size, Source: file, id: id}}
		return c.walkedDigest("file\x00"+file, files)
	}
	return c.folderDigest(filepath.Dir(file))
}

// folderDigest returns the digest of the skill folder dir.
func (c *loadCache) folderDigest(dir string) string {
	var fi fs.FileInfo // the folder, for a watched digest
	var err error
	ticket := c.treeReads.Load()
	if c.watch.Load() {
		var ok bool
		if fi, ok = statFolder(dir); !ok {
			return ""
		}
	}
	key := folderKey(dir)
	c.mu.Lock()
	if c.tw == nil && c.watch.Load() {
		if c.tw, err = newTreeWatch(); err != nil {
			c.watch.Store(false)
		}
	}
	watching := c.tw != nil && fi != nil
	if watching {
		c.drainTree(ticket)
	}
	d, ok := c.digests.Get(key)
	if ok && d.tree != nil {
		if watching && d.current(fi) {
			c.mu.Unlock()
			return d.digest
		}
		c.digests.Remove(key) // releases its watches
		ok = false
	}
	c.mu.Unlock()

	c.walks.Add(1)
	w, err := walkFolder(dir, Limits{})
	if err != nil {
		return ""
	}
	if ok && sameFiles(d.files, w.files) {
		return d.digest // walked before, unchanged
	}
	if watching && w.links == 0 && localFS(w.root) {
		if digest, done := c.watchFolder(key, dir, w); done {
			return digest
		}
	}
	return c.walkedDigest(key, w.files)
}

// walkedDigest returns the digest of files, kept under key while a walk
// finds the same paths and identities; "" when they cannot be digested.
func (c *loadCache) walkedDigest(key string, files []File) string {
	c.mu.Lock()
	d, ok := c.digests.Get(key)
	c.mu.Unlock()
	if ok && d.tree == nil && sameFiles(d.files, files) {
		return d.digest
	}
	digest, err := DigestFiles(files)
	if err != nil {
		return ""
	}
	c.put(key, &cachedDigest{digest: digest, files: files})
	return digest
}

// folderPaths are what the watches of the folder w walked cover: the
// folder, its folders and its files.
func folderPaths(w *walker) []string {
	paths := make([]string, 0, 1+len(w.dirs)+len(w.files))
	paths = append(paths, w.root)
	paths = append(paths, w.dirs...)
	for _, f := range w.files {
		paths = append(paths, f.Source)
	}
	return paths
}

// addWatchesUnlock makes room for watches on paths, dropping the oldest
// kept digests, and adds them. c.mu must be held with c.tw set; it is
// unlocked on return.
func (c *loadCache) addWatchesUnlock(paths []string) (*watchedTree, error) {
	for c.tw.held()+len(paths) > c.maxWatches && c.digests.Len() > 0 {
		c.digests.RemoveOldest()
	}
	tree, err := c.tw.add(paths)
	c.mu.Unlock()
	return tree, err
}

// keptDigest is the digest of a folder read again (again) under the
// watches of tree, with its root's identity and its skill file's.
func keptDigest(digest string, tree *watchedTree, root fs.FileInfo, plain bool, again *walker) *cachedDigest {
	d := &cachedDigest{digest: digest, tree: tree, inode: inodeOf(root), plain: plain}
	for _, f := range again.files {
		if f.Path == SkillFile {
			d.skill = f.id
		}
	}
	return d
}

// releaseTree releases the watches of tree, unless the cache was closed
// meanwhile.
func (c *loadCache) releaseTree(tree *watchedTree) {
	c.mu.Lock()
	if c.tw != nil {
		c.tw.release(tree)
	}
	c.mu.Unlock()
}

// watchFolder watches the folder w walked, then walks it again and reads
// its files: what changes once the watches are in place is reported, what
// changed before is read. done is false when the folder cannot be watched
// (it is then walked on every Load); a folder that changed in between is
// digested as read, but not kept.
func (c *loadCache) watchFolder(key, dir string, w *walker) (digest string, done bool) {
	paths := folderPaths(w)
	if len(paths) > c.maxWatches {
		return "", false
	}
	c.mu.Lock()
	if c.tw == nil { // closed meanwhile
		c.mu.Unlock()
		return "", false
	}
	tree, err := c.addWatchesUnlock(paths)
	if err != nil {
		return "", false
	}
	kept := false
	defer func() {
		if !kept {
			c.releaseTree(tree)
		}
	}()

	root, err := os.Stat(w.root)
	if err != nil {
		return "", true
	}
	c.walks.Add(1)
	again, err := walkFolder(dir, Limits{})
	if err != nil {
		return "", true
	}
	if !sameTree(w, again) {
		digest, _ = DigestFiles(again.files)
		return digest, true
	}
	if !oneDevice(root, again.files) {
		return "", false
	}
	if digest, err = DigestFiles(again.files); err != nil {
		return "", true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tw != nil && !tree.stale {
		c.putLocked(key, keptDigest(digest, tree, root, w.root == dir, again))
		kept = true
	}
	return digest, true
}

// sameTree reports whether two walks found the same folders and files
// (paths only: a file replaced after its watch was added is an event).
func sameTree(a, b *walker) bool {
	if a.root != b.root || b.links != 0 || !slices.Equal(a.dirs, b.dirs) || len(a.files) != len(b.files) {
		return false
	}
	for i, f := range a.files {
		if g := b.files[i]; g.Path != f.Path || g.Source != f.Source {
			return false
		}
	}
	return true
}

// sameFiles reports whether files have the paths and identities of kept.
func sameFiles(kept, files []File) bool {
	if len(kept) != len(files) {
		return false
	}
	for i, f := range files {
		g := kept[i]
		if g.Path != f.Path || g.Source != f.Source || g.id != f.id {
			return false
		}
	}
	return true
}

func (c *loadCache) put(key string, d *cachedDigest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(key, d)
}

// putLocked keeps d under key, releasing the watches of the digest it
// replaces. c.mu must be held.
func (c *loadCache) putLocked(key string, d *cachedDigest) {
	if old, ok := c.digests.Peek(key); ok && old != d {
		c.unwatch(old)
	}
	c.digests.Add(key, d)
}
