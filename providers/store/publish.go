package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// Local is a skill read from disk, ready to publish: its record (without
// the publication time) and its archive.
type Local struct {
	Path    string // the folder or flat file it was read from
	Record  Record
	archive []byte
}

// ErrInvalidSkill reports a skill on disk that cannot be published; the
// message says why.
var ErrInvalidSkill = errors.New("cannot publish skill")

// ReadOptions says what ReadSkillWith publishes beyond the default.
type ReadOptions struct {
	// IncludeHidden publishes hidden files and folders (names starting
	// with a dot) other than version control folders (.git, .hg, .svn),
	// which are never published.
	IncludeHidden bool
	// Root, when set, is the skills root the skill was found in: a skill
	// folder (or file) that is a symbolic link leading outside it is
	// refused unless LinksOut.
	Root     string
	LinksOut bool
}

// ErrLinkOut reports a skill folder or file that is a symbolic link
// leading outside the pushed root.
var ErrLinkOut = errors.New("skill is a symbolic link leading outside the pushed root")

// ReadSkill is ReadSkillWith with the default options: no hidden files,
// no links out of a root.
func ReadSkill(path string, cfg Config) (Local, error) {
	return ReadSkillWith(path, cfg, ReadOptions{})
}

// ReadSkillWith reads the skill at path for publishing: a skill folder
// (holding SKILL.md and any other files) or a flat skill file, digested
// as one file named SKILL.md. Version control folders are left out, and
// hidden files unless opts.IncludeHidden. It refuses, naming the path and
// the reason, a SKILL.md that is not a valid skill, one the Agent Skills
// specification refuses as validate does (agentskills.Document.Check,
// agentskills.CheckFileName: a name other than its folder's or file's, a
// description or compatibility too long, a skill file named Skill.md or
// skill.md), a whenToUse over MaxWhenToUseLength characters (a store read
// refuses it), a symbolic link leaving the
// folder, a special file, a file name with control characters, more files
// or bytes than the configured limits, a file that changed (or became a
// link) between the listing and the read, and (see ReadOptions) a skill
// that is a link out of its root.
func ReadSkillWith(path string, cfg Config, opts ReadOptions) (Local, error) {
	cfg = cfg.withDefaults()
	fi, err := os.Stat(path)
	if err != nil {
		return Local{}, fmt.Errorf("%w: %v", ErrInvalidSkill, err)
	}
	if opts.Root != "" && !opts.LinksOut {
		if err := checkInRoot(path, opts.Root); err != nil {
			return Local{}, fmt.Errorf("%w: %v", ErrInvalidSkill, err)
		}
	}
	sel := agentskills.NoHidden
	if opts.IncludeHidden {
		sel = agentskills.NoVCS
	}
	var files []agentskills.File
	if fi.IsDir() {
		if m := agentskills.Misnamed(path); m != "" {
			return Local{}, fmt.Errorf("%w: %s: %s", ErrInvalidSkill, m, reason(agentskills.CheckFileName(m)))
		}
		files, err = agentskills.FilesOf(path, cfg.limits(), sel)
		if err != nil {
			return Local{}, fmt.Errorf("%w: %v", ErrInvalidSkill, err)
		}
	} else {
		if err := agentskills.CheckFileName(path); err != nil {
			return Local{}, fmt.Errorf("%w: %s: %s", ErrInvalidSkill, path, reason(err))
		}
		lim := cfg.limits()
		max := lim.MaxBytes
		if max <= 0 {
			max = skillstore.DefaultMaxBytes
		}
		if !fi.Mode().IsRegular() {
			return Local{}, fmt.Errorf("%w: %s: %v", ErrInvalidSkill, path, agentskills.ErrNotRegular)
		}
		if fi.Size() > max {
			return Local{}, fmt.Errorf("%w: %s: file of %d bytes, over the limit of %d", ErrInvalidSkill, path, fi.Size(), max)
		}
		f, err := agentskills.FlatFile(path)
		if err != nil {
			return Local{}, fmt.Errorf("%w: %v", ErrInvalidSkill, err)
		}
		files = []agentskills.File{f}
	}
	for _, f := range files {
		if err := skillstore.CheckPath(f.Path); err != nil {
			return Local{}, fmt.Errorf("%w: %s: %v", ErrInvalidSkill, filepath.Join(path, filepath.FromSlash(f.Path)), err)
		}
	}
	var skillFile *agentskills.File
	var total int64
	for i := range files {
		total += files[i].Size
		if files[i].Path == agentskills.SkillFile {
			skillFile = &files[i]
		}
	}
	if skillFile == nil {
		return Local{}, fmt.Errorf("%w: %s has no SKILL.md", ErrInvalidSkill, path)
	}
	if skillFile.Size > agentskills.MaxFileSize {
		return Local{}, fmt.Errorf("%w: %s: SKILL.md is %d bytes; skill files are read up to %d bytes", ErrInvalidSkill, path, skillFile.Size, agentskills.MaxFileSize)
	}
	archive, digest, err := pack(files)
	if err != nil {
		return Local{}, fmt.Errorf("%w: %s: %v", ErrInvalidSkill, path, err)
	}
	// Parse what was archived, not the disk again; refuse what validate
	// refuses (the Agent Skills specification's rules), with its reasons.
	unpacked, err := skillstore.Unpack(bytes.NewReader(archive), digest, skillstore.Limits{MaxFiles: len(files), MaxBytes: max(total, 1)})
	if err != nil {
		return Local{}, fmt.Errorf("%w: %s: %v", ErrInvalidSkill, path, err)
	}
	file := skillPath(path, fi.IsDir())
	var d agentskills.Document
	for _, f := range unpacked {
		if f.Path == agentskills.SkillFile {
			d, err = agentskills.Parse(f.Data)
		}
	}
	if err != nil {
		return Local{}, fmt.Errorf("%w: %s: %s", ErrInvalidSkill, file, reason(err))
	}
	problems := d.Check(file)
	if n := utf8.RuneCountInString(d.WhenToUse); n > MaxWhenToUseLength {
		problems = append(problems, fmt.Sprintf("whenToUse is %d characters; a store holds at most %d", n, MaxWhenToUseLength))
	}
	if len(problems) > 0 {
		return Local{}, fmt.Errorf("%w: %s: %s", ErrInvalidSkill, file, strings.Join(problems, "; "))
	}
	return Local{Path: path, archive: archive, Record: Record{
		Name: d.Name, Description: d.Description, WhenToUse: d.WhenToUse, Invocation: d.Invocation,
		Digest: digest, Object: skillstore.ObjectName(digest), Size: total, Files: len(files),
	}}, nil
}

// reason is why err refuses a skill: a *agentskills.ParseError's reason,
// without the path the caller names.
func reason(err error) string {
	var pe *agentskills.ParseError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return err.Error()
}

// checkInRoot refuses a skill path whose real location (symbolic links
// resolved) is not below the real root.
func checkInRoot(path, root string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	realRoot, real = absOr(realRoot), absOr(real)
	if !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
		return fmt.Errorf("%s -> %s: %w %s (push it by its own path, or allow it with --follow-links-out)", path, real, ErrLinkOut, root)
	}
	return nil
}

func skillPath(path string, dir bool) string {
	if dir {
		return filepath.Join(path, agentskills.SkillFile)
	}
	return path
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Publisher writes to and reads from the store for publishers and
// operators (the `skills` command).
type Publisher struct {
	cfg Config
	js  jetstream.JetStream
	kv  jetstream.KeyValue
	obs jetstream.ObjectStore
	idx jetstream.Stream // the index's stream (see neverWritten)
	now func() time.Time

	beforeWrite  func() // test hook: runs between the read and the write of a key
	beforeDelete func() // test hook: runs before Collect removes each object
}

// NewPublisher opens (creating when missing) the store's buckets.
func NewPublisher(ctx context.Context, js jetstream.JetStream, cfg Config) (*Publisher, error) {
	cfg, kv, obs, err := buckets(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	idx, err := js.Stream(ctx, "KV_"+cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("skill index bucket %s: %w", cfg.Bucket, err)
	}
	return &Publisher{cfg: cfg, js: js, kv: kv, obs: obs, idx: idx, now: time.Now}, nil
}

// Epoch is the epoch of the store's buckets now: the identity of this
// incarnation of them, which every serve following them computes alike
// and which changes when they are deleted and created again. A revision
// of the index means something only beside it.
func (pb *Publisher) Epoch(ctx context.Context) (string, error) {
	id, err := identityOf(ctx, pb.js, pb.cfg)
	if err != nil {
		return "", err
	}
	return id.epoch, nil
}

// Action is what a push did to one skill.
type Action string

// The actions of a push.
const (
	Added     Action = "added"
	Updated   Action = "updated"
	Unchanged Action = "unchanged"
	Removed   Action = "removed"
)

// Change is one line of a push's outcome.
type Change struct {
	Action   Action
	Name     string
	Rev      uint64 // the entry's number in the skill's history (see At)
	Revision uint64 // its store revision: what read-your-writes waits for
	Digest   string // empty for Removed
	// Draft says the revision was pushed as a draft: the candidate of a
	// release, offered to no session until it is released.
	Draft bool
	// Ended says the write ended the skill's release in progress: a push
	// without Draft (its revision stable at once) or a rollback.
	Ended bool
}

// PushOptions says how Push publishes.
type PushOptions struct {
	// Prune removes the scope's skills not among those pushed.
	Prune bool
	// Draft pushes each changed skill as a draft: the candidate of a
	// release (stable stays what it was for every session) that
	// Publisher.Release then offers to a share of sessions.
	Draft bool
	// By names the publisher in the release (ReleaseState.By).
	By string
	// Sign, when not nil, signs each revision written (see SignRecord); a
	// skill whose digest is unchanged is written again when its newest
	// revision is not signed by this key.
	Sign nkeys.KeyPair
}

// Push publishes skills in scope: each skill whose digest differs from the
// published one gets a new revision (its files stored first), the others
// are left alone; with prune, the scope's skills not among skills are
// removed. Every write is conditional on the revision read, so a
// concurrent publisher's change is never overwritten: it fails with an
// error wrapping ErrChanged. Changes come by name, removals last.
func (pb *Publisher) Push(ctx context.Context, scope skillstore.Scope, skills []Local, prune bool) ([]Change, error) {
	return pb.PushWith(ctx, scope, skills, PushOptions{Prune: prune})
}

// PushWith is Push with options. Without Draft, a skill with a release in
// progress that gets a new revision is stable at once and its release is
// ended (Change.Ended). With Draft, each changed skill's new revision is
// a release's candidate: the release entry is written first (its stable
// the current release's, or the current revision), then the revision, so
// that a push interrupted between the two writes exposes nothing (a
// newest revision the release does not name as its candidate is offered
// to no session).
func (pb *Publisher) PushWith(ctx context.Context, scope skillstore.Scope, skills []Local, opts PushOptions) ([]Change, error) {
	prune := opts.Prune
	if prune && opts.Draft {
		return nil, fmt.Errorf("%w: a draft push cannot prune: removals are not released", ErrInvalidSkill)
	}
	seen := make(map[string]string, len(skills))
	for _, l := range skills {
		if first, dup := seen[l.Record.Name]; dup {
			return nil, fmt.Errorf("%w: skill %q is in both %s and %s", ErrInvalidSkill, l.Record.Name, first, l.Path)
		}
		seen[l.Record.Name] = l.Path
	}
	sorted := append([]Local(nil), skills...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Record.Name < sorted[j].Record.Name })
	var out []Change
	for _, l := range sorted {
		c, err := pb.pushOne(ctx, scope, l, opts)
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	if !prune {
		return out, nil
	}
	current, err := pb.List(ctx, scope)
	if err != nil {
		return out, err
	}
	for _, p := range current {
		if _, keep := seen[p.Record.Name]; keep {
			continue
		}
		c, err := pb.remove(ctx, scope, p.Record.Name, p.Revision)
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (pb *Publisher) pushOne(ctx context.Context, scope skillstore.Scope, l Local, opts PushOptions) (Change, error) {
	key := scope.Key(l.Record.Name)
	cur, err := pb.headOf(ctx, scope, l.Record.Name)
	if err != nil {
		return Change{}, err
	}
	if cur.live && cur.rec.Digest == l.Record.Digest && signedBy(opts.Sign, scope, cur.rec) {
		// Unchanged; its files are stored again should they be gone
		// (removed by a gc racing the push that wrote this entry).
		if err := pb.putObject(ctx, l); err != nil {
			return Change{}, err
		}
		return Change{Action: Unchanged, Name: l.Record.Name, Rev: cur.rev, Revision: cur.last, Digest: cur.rec.Digest}, nil
	}
	// Read after the check above: a push of unchanged skills reads one
	// key each, as before releases.
	rel, err := pb.readRelease(ctx, scope, l.Record.Name)
	if err != nil && opts.Draft {
		return Change{}, err
	}
	if err != nil {
		// A release entry not written by skillstream: a push makes the
		// skill stable, and removes it.
		e, gerr := pb.kv.Get(ctx, ReleaseKey(scope, l.Record.Name))
		if gerr != nil {
			return Change{}, err
		}
		rel = release{revision: e.Revision()}
	}
	if pb.beforeWrite != nil {
		pb.beforeWrite()
	}
	if err := pb.putObject(ctx, l); err != nil {
		return Change{}, err
	}
	rec := l.Record
	rec.Published = pb.now().UnixMilli()
	rec.Rev = cur.rev + 1
	rec.Signature = nil
	if opts.Sign != nil {
		if rec.Signature, err = SignRecord(opts.Sign, scope, rec); err != nil {
			return Change{}, fmt.Errorf("sign %q: %w", rec.Name, err)
		}
	}
	action := Updated
	if !cur.exists {
		action = Added
	}
	var drafted uint64 // the release entry a draft wrote
	if opts.Draft {
		next := ReleaseState{Channel: ChannelDraft, By: clipBy(opts.By), Candidate: &RevRef{Rev: rec.Rev, Digest: rec.Digest}}
		switch {
		case rel.revision != 0:
			next.Stable = rel.r.Stable
		case cur.live:
			next.Stable = &RevRef{Rev: cur.rev, Revision: cur.last, Digest: cur.rec.Digest}
		}
		if drafted, err = pb.writeRelease(ctx, scope, rec.Name, next, rel.revision); err != nil {
			return Change{}, err
		}
	}
	// Conditional on the entry read, a removal's included (0: the key has
	// none), so that the number written is the one after it.
	rev, err := pb.kv.Update(ctx, key, rec.encode(), cur.last)
	if err != nil && drafted != 0 {
		// Put the release back as it was: its candidate was not written.
		if rel.revision != 0 {
			pb.kv.Update(ctx, ReleaseKey(scope, rec.Name), encodeJSON(rel.r), drafted)
		} else {
			pb.kv.Delete(ctx, ReleaseKey(scope, rec.Name), jetstream.LastRevision(drafted))
		}
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return Change{}, fmt.Errorf("skill %q in %s %w (revision %d): another publisher wrote it; read again and retry", l.Record.Name, scope, ErrChanged, cur.rev)
	}
	if err != nil {
		return Change{}, fmt.Errorf("write %s: %w", key, err)
	}
	c := Change{Action: action, Name: rec.Name, Rev: rec.Rev, Revision: rev, Digest: rec.Digest, Draft: opts.Draft}
	if !opts.Draft && rel.revision != 0 {
		if err := pb.endRelease(ctx, scope, rec.Name, rel.revision); err != nil {
			return c, err
		}
		c.Ended = true
	}
	// A gc may have removed the object between putObject and the index
	// write (an old object, reused). Looking again after the write closes
	// that gap: gc looks at the index after removing, so one of the two
	// sees the other.
	if err := pb.putObject(ctx, l); err != nil {
		return Change{}, err
	}
	return c, nil
}

// putObject stores l's archive under its digest unless it is there.
func (pb *Publisher) putObject(ctx context.Context, l Local) error {
	if _, err := pb.obs.GetInfo(ctx, l.Record.Object); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("look up object %s: %w", skillstore.Short(l.Record.Object), err)
	}
	_, err := pb.obs.PutBytes(ctx, l.Record.Object, l.archive)
	if err != nil {
		return fmt.Errorf("store files of %q: %w", l.Record.Name, err)
	}
	return nil
}

// Published is one skill as the index holds it.
type Published struct {
	Scope    skillstore.Scope
	Record   Record
	Rev      uint64 // its number in the skill's history (see At)
	Revision uint64 // its store revision
	Created  time.Time
}

// List returns the skills published in scope, by name.
func (pb *Publisher) List(ctx context.Context, scope skillstore.Scope) ([]Published, error) {
	return pb.list(ctx, scope.Filter())
}

// ListAll returns every published skill, by scope (global first) and name.
func (pb *Publisher) ListAll(ctx context.Context) ([]Published, error) {
	return pb.list(ctx, ">")
}

func (pb *Publisher) list(ctx context.Context, filter string) ([]Published, error) {
	w, err := pb.kv.Watch(ctx, filter, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", pb.cfg.Bucket, err)
	}
	defer w.Stop()
	var out []Published
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("list %s: watch ended", pb.cfg.Bucket)
			}
			if e == nil {
				if err := pb.numberUnrecorded(ctx, filter, out); err != nil {
					return nil, err
				}
				sort.Slice(out, func(i, j int) bool {
					a, b := out[i], out[j]
					if a.Scope != b.Scope {
						return a.Scope.ProjectID() < b.Scope.ProjectID()
					}
					return a.Record.Name < b.Record.Name
				})
				return out, nil
			}
			sc, name, err := parseKey(e.Key())
			if err != nil {
				continue
			}
			rec, err := decodeRecord(name, e.Value())
			if err != nil {
				continue
			}
			out = append(out, Published{Scope: sc, Record: rec, Rev: rec.Rev, Revision: e.Revision(), Created: e.Created()})
		}
	}
}

// Revision is one revision of a skill's index entry.
type Revision struct {
	Rev      uint64 // its number in the skill's history (see At)
	Revision uint64 // its store revision
	// Counted says that no kept revision of the skill records its number
	// (all were written before skills numbered their revisions): the
	// numbers are counted from the oldest kept one, and shift when it
	// leaves the history.
	Counted bool
	Removed bool
	Record  Record // zero when Removed or malformed
	Err     error  // why Record could not be decoded
	Created time.Time
}

// History returns the revisions the index keeps of name in scope, oldest
// first, numbered in the skill's history (see At). It returns an error
// wrapping catalog.ErrNotFound when there are none.
func (pb *Publisher) History(ctx context.Context, scope skillstore.Scope, name string) ([]Revision, error) {
	return history(ctx, pb.kv, scope, name)
}

// history is History, read from the index kv.
func history(ctx context.Context, kv jetstream.KeyValue, scope skillstore.Scope, name string) ([]Revision, error) {
	if err := catalog.CheckName(name); err != nil {
		return nil, err
	}
	es, err := kv.History(ctx, scope.Key(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("skill %q in %s: %w", name, scope, catalog.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", scope.Key(name), err)
	}
	out := make([]Revision, 0, len(es))
	for _, e := range es {
		r := Revision{Revision: e.Revision(), Created: e.Created(), Removed: e.Operation() != jetstream.KeyValuePut}
		if !r.Removed {
			r.Record, r.Err = decodeRecord(name, e.Value())
		}
		out = append(out, r)
	}
	numberHistory(out)
	return out, nil
}

// Remove deletes name from scope (a delete marker: earlier revisions stay
// readable) and returns the marker's store revision. It fails with an
// error wrapping catalog.ErrNotFound when the skill is not published
// there, and with ErrChanged when it changed while being removed.
func (pb *Publisher) Remove(ctx context.Context, scope skillstore.Scope, name string) (uint64, error) {
	c, err := pb.RemoveSkill(ctx, scope, name)
	return c.Revision, err
}

// RemoveSkill is Remove, returning the removal's number in the skill's
// history beside its store revision.
func (pb *Publisher) RemoveSkill(ctx context.Context, scope skillstore.Scope, name string) (Change, error) {
	if err := catalog.CheckName(name); err != nil {
		return Change{}, err
	}
	e, err := pb.kv.Get(ctx, scope.Key(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Change{}, fmt.Errorf("skill %q in %s: %w", name, scope, catalog.ErrNotFound)
	}
	if err != nil {
		return Change{}, fmt.Errorf("read %s: %w", scope.Key(name), err)
	}
	return pb.remove(ctx, scope, name, e.Revision())
}

func (pb *Publisher) remove(ctx context.Context, scope skillstore.Scope, name string, last uint64) (Change, error) {
	key := scope.Key(name)
	err := pb.kv.Delete(ctx, key, jetstream.LastRevision(last))
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return Change{}, fmt.Errorf("skill %q in %s %w (store revision %d): another publisher wrote it; read again and retry", name, scope, ErrChanged, last)
	}
	if err != nil {
		return Change{}, fmt.Errorf("remove %s: %w", key, err)
	}
	c := Change{Action: Removed, Name: name}
	hist, err := pb.History(ctx, scope, name)
	if err != nil {
		return c, nil // removed; the marker's revision is unknown
	}
	// The marker is the first removal after the revision it was written on.
	for _, h := range hist {
		if h.Removed && h.Revision > last {
			c.Rev, c.Revision = h.Rev, h.Revision
			break
		}
	}
	return c, nil
}

// Get returns the entry of name in scope at a revision: the current one
// for the zero At. A revision the index does not keep, and a removal, are
// errors wrapping ErrNotKept; a skill not published (or removed, for the
// current one) wraps catalog.ErrNotFound.
func (pb *Publisher) Get(ctx context.Context, scope skillstore.Scope, name string, at At) (Published, error) {
	if err := catalog.CheckName(name); err != nil {
		return Published{}, err
	}
	if at == (At{}) {
		// The current entry records its number: one read.
		e, err := pb.kv.Get(ctx, scope.Key(name))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return Published{}, fmt.Errorf("skill %q in %s: %w", name, scope, catalog.ErrNotFound)
		}
		if err != nil {
			return Published{}, fmt.Errorf("read %s: %w", scope.Key(name), err)
		}
		if rec, err := decodeRecord(name, e.Value()); err == nil && rec.Rev > 0 && rec.Rev <= maxRev {
			return Published{Scope: scope, Record: rec, Rev: rec.Rev, Revision: e.Revision(), Created: e.Created()}, nil
		}
	}
	hist, err := pb.History(ctx, scope, name)
	if err != nil {
		return Published{}, err
	}
	h, err := pick(hist, scope, name, at)
	if err != nil {
		return Published{}, err
	}
	return Published{Scope: scope, Record: h.Record, Rev: h.Rev, Revision: h.Revision, Created: h.Created}, nil
}

// numberUnrecorded numbers the listed records written without their
// number (by an older skillstream) from their keys' histories, read in
// one watch; a listing of records that all record theirs reads nothing
// more.
func (pb *Publisher) numberUnrecorded(ctx context.Context, filter string, ps []Published) error {
	keys := map[string]bool{}
	for _, p := range ps {
		if p.Rev == 0 || p.Rev > maxRev {
			keys[p.Scope.Key(p.Record.Name)] = true
		}
	}
	if len(keys) == 0 {
		return nil
	}
	nums, err := pb.numbersOf(ctx, filter, keys)
	if err != nil {
		return err
	}
	for i, p := range ps {
		if keys[p.Scope.Key(p.Record.Name)] {
			ps[i].Rev = nums[p.Scope.Key(p.Record.Name)][p.Revision]
		}
	}
	return nil
}

// Materialize writes the files of digest, read from the store's object
// store within its limits, into dir (see skillstore.Materialize).
func (pb *Publisher) Materialize(ctx context.Context, digest, dir string) error {
	return skillstore.Materialize(ctx, pb.obs, digest, dir, pb.cfg.objectLimits())
}

// signedBy reports whether rec, the newest revision of its skill in
// scope, carries a valid signature by kp; with no kp, any revision will
// do.
func signedBy(kp nkeys.KeyPair, scope skillstore.Scope, rec Record) bool {
	if kp == nil {
		return true
	}
	pub, err := kp.PublicKey()
	if err != nil || rec.Signature == nil || rec.Signature.Key != pub {
		return false
	}
	return VerifyRecord(scope, rec.Name, rec) == nil
}
