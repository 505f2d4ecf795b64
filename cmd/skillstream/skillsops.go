package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/processor/replay"
	"github.com/skillstream/skillstream/providers/store"
)

// maxDiffFile is the largest file skills diff shows line by line.
const maxDiffFile = 1 << 20

// parseRevision reads a revision argument: N, the skill's Nth revision,
// or store:N, its revision at store revision N.
func parseRevision(s string) (store.At, error) {
	text, byStore := strings.CutPrefix(s, "store:")
	rev, err := strconv.ParseUint(text, 10, 64)
	if err != nil || rev == 0 {
		return store.At{}, usagef("revision %q: want a positive integer, the skill's revision, or store:N, a store revision (skills history lists both)", s)
	}
	if byStore {
		return store.At{Store: rev}, nil
	}
	return store.At{Rev: rev}, nil
}

// explainMissing turns "not found" into what the operator must check: the
// skill, or the scope, that does not exist.
func explainMissing(ctx context.Context, pb *store.Publisher, sc skillstore.Scope, err error) error {
	if !errors.Is(err, catalog.ErrNotFound) {
		return err
	}
	if ps, lerr := pb.List(ctx, sc); lerr == nil && len(ps) == 0 {
		return fmt.Errorf("%w (scope %s holds no skills: does it exist?)", err, sc)
	}
	return err
}

// skillsDiff prints the files added, removed and changed between two
// revisions of a skill and a unified diff of the changed text files.
func (a *app) skillsDiff(ctx context.Context, pb *store.Publisher, sc skillstore.Scope, name string, revA, revB store.At) error {
	pa, err := pb.Get(ctx, sc, name, revA)
	if err != nil {
		return explainMissing(ctx, pb, sc, err)
	}
	pbv, err := pb.Get(ctx, sc, name, revB)
	if err != nil {
		return explainMissing(ctx, pb, sc, err)
	}
	fa, err := pb.Files(ctx, pa.Record.Digest)
	if err != nil {
		return fmt.Errorf("revision %d: %w", pa.Rev, err)
	}
	fb, err := pb.Files(ctx, pbv.Record.Digest)
	if err != nil {
		return fmt.Errorf("revision %d: %w", pbv.Rev, err)
	}
	w := a.stdout
	fmt.Fprintf(w, "%s in %s: rev %d %s -> rev %d %s\n", name, sc, pa.Rev, skillstore.Short(pa.Record.Digest), pbv.Rev, skillstore.Short(pbv.Record.Digest))
	return writeFileDiff(w, fa, fb, pa.Rev, pbv.Rev)
}

// writeFileDiff writes one line per file added, removed or changed (by
// path), then the unified diffs of the changed and added or removed text
// files.
func writeFileDiff(w io.Writer, fa, fb []skillstore.File, revA, revB uint64) error {
	var diffs bytes.Buffer
	changed := 0
	for _, c := range skillstore.ChangedFiles(fa, fb) {
		p, what, da, db := c.Path, c.What, c.A, c.B
		inA, inB := c.What != "added", c.What != "removed"
		changed++
		fmt.Fprintf(w, "%-7s %s\n", what, strconv.Quote(p)[1:len(strconv.Quote(p))-1])
		from, to := fmt.Sprintf("a/%s (rev %d)", p, revA), fmt.Sprintf("b/%s (rev %d)", p, revB)
		if !inA {
			from = "/dev/null"
		}
		if !inB {
			to = "/dev/null"
		}
		if !isText(da) || !isText(db) {
			fmt.Fprintf(&diffs, "binary or over %d bytes: %s not shown\n", maxDiffFile, p)
			continue
		}
		diffs.WriteString(replay.UnifiedDiff(from, to, string(da), string(db)))
	}
	if changed == 0 {
		fmt.Fprintln(w, "no file differs")
		return nil
	}
	if diffs.Len() > 0 {
		fmt.Fprintln(w)
		_, err := io.WriteString(w, catalog.Reveal(diffs.String())) // the files are the pusher's text
		return err
	}
	return nil
}

// isText reports whether b is shown line by line: valid UTF-8 without NUL
// bytes, at most maxDiffFile bytes.
func isText(b []byte) bool {
	return len(b) <= maxDiffFile && utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

// skillsRollback publishes an earlier revision's files as a new revision.
func (a *app) skillsRollback(ctx context.Context, pb *store.Publisher, sc skillstore.Scope, name string, to store.At) error {
	epoch, err := pb.Epoch(ctx)
	if err != nil {
		return err
	}
	ch, from, err := pb.Rollback(ctx, sc, name, to)
	if err != nil {
		return explainMissing(ctx, pb, sc, err)
	}
	if err := samePushEpoch(ctx, pb, epoch); err != nil {
		return err
	}
	switch {
	case ch.Ended && ch.Action == store.Removed:
		fmt.Fprintf(a.stdout, "ended the release of %s: it was new in the release, and is removed (rev %d)\n", name, ch.Rev)
	case ch.Ended && ch.Action == store.Unchanged:
		fmt.Fprintf(a.stdout, "ended the release of %s: every session is back on rev %d %s\n", name, from.Rev, skillstore.Short(ch.Digest))
		return nil
	case ch.Ended:
		fmt.Fprintf(a.stdout, "ended the release of %s: every session is back on the files of rev %d, published as rev %d %s\n", name, from.Rev, ch.Rev, skillstore.Short(ch.Digest))
	case ch.Action == store.Unchanged:
		fmt.Fprintf(a.stdout, "unchanged %s rev %d %s: revision %d has the current files\n", name, ch.Rev, skillstore.Short(ch.Digest), from.Rev)
		return nil
	default:
		fmt.Fprintf(a.stdout, "rolled back %s to the files of rev %d: rev %d %s\n", name, from.Rev, ch.Rev, skillstore.Short(ch.Digest))
	}
	fmt.Fprintf(a.stdout, "store revision %d epoch %s\n", ch.Revision, epoch)
	return nil
}
