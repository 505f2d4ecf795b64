package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/processor/replay"
	"github.com/skillstream/skillstream/processor/usage/projection"
	"github.com/skillstream/skillstream/providers/store"
	"github.com/skillstream/skillstream/providers/store/audit"
)

// place is where a skill page's skill is: a scope of the tenant's store,
// the library, or the folders; from the page's "in" query value.
type place struct {
	In     string // "global", "project/<id>", "library" or "folder"
	Source string // SourceStore, SourceLibrary or SourceFolder
	Scope  skillstore.Scope
	pb     *store.Publisher
}

// placeOf reads the skill name and its place from r.
func (s *Server) placeOf(r *http.Request, in string) (string, place, error) {
	name := r.PathValue("name")
	if err := catalog.CheckName(name); err != nil {
		return "", place{}, BadRequest("skill name %q: %v", clipText(name), err)
	}
	if in == "" {
		in = "global"
	}
	switch in {
	case SourceLibrary:
		if s.cfg.Sources.Library == nil {
			return "", place{}, NotFound("this console reads no library")
		}
		return name, place{In: in, Source: SourceLibrary, Scope: skillstore.Global, pb: s.cfg.Sources.Library}, nil
	case SourceFolder:
		if s.cfg.Sources.Registry == nil {
			return "", place{}, NotFound("this console reads no skill folders")
		}
		return name, place{In: in, Source: SourceFolder}, nil
	}
	sc, err := skillstore.ParseScope(in)
	if err != nil {
		return "", place{}, BadRequest("in=%q: want global, project/<id>, library or folder", clipText(in))
	}
	if s.cfg.Sources.Store == nil {
		return "", place{}, NotFound("this console reads no skill store")
	}
	return name, place{In: sc.String(), Source: SourceStore, Scope: sc, pb: s.cfg.Sources.Store}, nil
}

// revisionRow is one revision of the skill page.
type revisionRow struct {
	Rev      uint64
	Revision uint64
	Created  time.Time
	Removed  bool
	Broken   string
	Digest   string
	Size     int64
	Tokens   int64
	Signed   string // the signing key, "" unsigned
	// Who wrote it, as the audit trail says ("" with Audited false: not
	// audited; no trail read: AuditNote on the page says why).
	Who string
	// Current says it is the skill's newest revision; Candidate that it
	// is its release's candidate; Stable what sessions outside a canary
	// get.
	Current, Candidate, Stable bool
	Pinned                     []string
}

// skillData is the skill page.
type skillData struct {
	Name, In, Source, Detail string
	Description, WhenToUse   string
	// Found says the skill is there (a folder skill the registry offers,
	// or a store skill with a history).
	Revisions []revisionRow
	Status    *store.Status
	State     string // as skillRow.State
	Share     string
	Signature string
	Key, Why  string
	Size      int64
	Tokens    int64
	// AuditNote says why who wrote each revision is not shown.
	AuditNote string
	// Others are audit records of release and pin entries.
	Others []string
	// Done names the action just taken (from the redirect after it);
	// Unaudited says its write is not in the audit trail.
	Done      string
	Unaudited bool
	// Plot is the usage plot's data block, and PlotNote what it covers.
	Plot     *plotData
	PlotID   string
	PlotNote string
	// Acts says the skill's store takes the operators' actions.
	Acts   bool
	Latest uint64
	// CompareA and CompareB are the revisions the compare form starts
	// with: the newest kept one and the one before it.
	CompareA, CompareB uint64
}

func (d skillData) PageTitle() (string, string) { return d.Name, "skills" }

// doneText are the messages the skill page shows after an action.
var doneText = map[string]string{
	"rollback": "Rolled back.",
	"release":  "Released.",
	"promote":  "Promoted: the candidate is stable for every session.",
	"pin":      "Pinned.",
	"unpin":    "Unpinned.",
}

func (s *Server) skillPage(w http.ResponseWriter, r *http.Request) error {
	name, pl, err := s.placeOf(r, r.URL.Query().Get("in"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	d := skillData{Name: name, In: pl.In, Source: pl.Source, Done: doneText[r.URL.Query().Get("done")],
		Unaudited: r.URL.Query().Get("unaudited") == "1"}
	if pl.Source == SourceFolder {
		sk, err := s.cfg.Sources.Registry.Load(ctx, name, catalog.Query{})
		if errors.Is(err, catalog.ErrNotFound) {
			return NotFound("skill %q: no folder offers it", name)
		}
		if err != nil {
			return err
		}
		d.Description, d.WhenToUse, d.Detail = sk.Description, sk.WhenToUse, sk.Source
		d.Size, d.Signature, d.State = int64(len(sk.Content)), "unsigned", store.ChannelStable
		d.Tokens = d.Size / 4
		s.fillPlot(ctx, &d)
		s.render(w, r, http.StatusOK, "skill.html", d)
		return nil
	}
	hist, err := pl.pb.History(ctx, pl.Scope, name)
	if store.NotFound(err) {
		return NotFound("skill %q in %s: not in the store", name, pl.In)
	}
	if err != nil {
		return err
	}
	st, err := pl.pb.Status(ctx, pl.Scope, name)
	if err != nil {
		return err
	}
	d.Status = &st
	row := skillRow{State: store.ChannelStable}
	cur := hist[len(hist)-1]
	if !cur.Removed && cur.Err == nil {
		row.Signature, row.Key, row.Why = signatureOf(cur.Record, nil)
		d.Description, d.WhenToUse, d.Size = cur.Record.Description, cur.Record.WhenToUse, cur.Record.Size
		d.Tokens = d.Size / 4
	}
	row.applyStatus(st)
	d.State, d.Share, d.Signature, d.Key, d.Why = row.State, row.Share, row.Signature, row.Key, row.Why
	d.Acts = pl.Source == SourceStore
	d.Latest = cur.Rev
	who, others, note := s.auditOf(ctx, pl, name)
	d.AuditNote, d.Others = note, others
	for i := len(hist) - 1; i >= 0; i-- {
		h := hist[i]
		rr := revisionRow{Rev: h.Rev, Revision: h.Revision, Created: h.Created, Removed: h.Removed, Current: i == len(hist)-1}
		if h.Err != nil {
			rr.Broken = h.Err.Error()
		} else if !h.Removed {
			rr.Digest, rr.Size, rr.Tokens = h.Record.Digest, h.Record.Size, h.Record.Size/4
			if h.Record.Signature != nil {
				rr.Signed = h.Record.Signature.Key
			}
		}
		if st.Candidate != nil && st.Candidate.Rev == h.Rev && st.Channel != store.ChannelStable {
			rr.Candidate = true
		}
		if st.Stable != nil && st.Stable.Rev == h.Rev {
			rr.Stable = true
		}
		for _, p := range st.Pins {
			if p.Rev == h.Rev {
				rr.Pinned = append(rr.Pinned, p.Scope)
			}
		}
		if who != nil {
			rr.Who = who[h.Revision]
		}
		d.Revisions = append(d.Revisions, rr)
		if rr.Digest != "" {
			switch {
			case d.CompareB == 0:
				d.CompareB = rr.Rev
			case d.CompareA == 0:
				d.CompareA = rr.Rev
			}
		}
	}
	if d.CompareA == 0 {
		d.CompareA = d.CompareB
	}
	s.fillPlot(ctx, &d)
	s.render(w, r, http.StatusOK, "skill.html", d)
	return nil
}

// auditOf reads who wrote each revision of name (by store revision) and
// the records of its release and pin entries; note says why there is no
// trail to show.
func (s *Server) auditOf(ctx context.Context, pl place, name string) (who map[uint64]string, others []string, note string) {
	nc := s.cfg.Sources.AuditConn
	if nc == nil {
		return nil, nil, "Who wrote each revision is not shown: this console reads no audit trail."
	}
	st := audit.StoreTenant
	if pl.Source == SourceLibrary {
		st = audit.StoreLibrary
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rs, more, err := audit.Lookup(ctx, nc, audit.Query{Store: st, Name: name})
	if err != nil {
		return nil, nil, "Who wrote each revision is not shown: " + err.Error()
	}
	who = map[uint64]string{}
	key := pl.Scope.Key(name)
	for _, rec := range rs {
		switch rec.Op {
		case audit.OpPush, audit.OpRemove, audit.OpRollback:
			if rec.Key != key {
				continue
			}
			w := rec.Who()
			if prev := who[rec.Revision]; prev != "" && !strings.Contains(prev, w) {
				w = prev + ", also claimed by " + w
			}
			who[rec.Revision] = w
		default:
			others = append(others, fmt.Sprintf("%s %s by %s at %s: %s", rec.Op, rec.Key, rec.Who(), rec.At.UTC().Format(time.RFC3339), rec.Detail))
		}
	}
	if more {
		note = fmt.Sprintf("Older audit records are left out: at most %d are read.", audit.MaxAnswer)
	}
	return who, others, note
}

// plotData is the JSON a plot's data block holds: the shared contract
// of plot.js (see assets/plot.js).
type plotData struct {
	Title  string       `json:"title"`
	X      []int64      `json:"x"`
	Series []plotSeries `json:"series"`
}

type plotSeries struct {
	Label  string `json:"label"`
	Values []int  `json:"values"`
}

// plotHours is how many hours the skill page's usage plot covers.
const plotHours = 7 * 24

// fillPlot puts the skill's usage over the last 7 days, by the hour, in
// d: loads and errors from the usage projection's hour buckets.
func (s *Server) fillPlot(ctx context.Context, d *skillData) {
	d.PlotID = "plot-usage"
	if s.cfg.Sources.UsageBucket == "" || s.cfg.Sources.JS == nil {
		d.PlotNote = "No usage projection is configured: usage over time is not shown."
		return
	}
	p, err := s.skillHours(ctx, d.Name, s.cfg.Now(), plotHours)
	if err != nil {
		d.PlotNote = "Usage over time is not shown: " + err.Error()
		return
	}
	d.Plot = &p
	d.PlotNote = fmt.Sprintf("Loads and errors of %s by the hour (UTC), the last %d hours, as the usage projection counted them.", d.Name, plotHours)
}

// skillHours is name's loads and errors by the hour, hours hours ending
// with now's, as the usage page reads them (projection.ReadSeries): one
// point per hour, zeros where it was not used.
func (s *Server) skillHours(ctx context.Context, name string, now time.Time, hours int) (plotData, error) {
	opts, err := s.usageOptions(ctx)
	if err != nil {
		return plotData{}, err
	}
	end := now.UTC().Truncate(time.Hour)
	sr, err := projection.ReadSeriesPartitions(ctx, s.cfg.Sources.JS, opts, len(s.cfg.Sources.Partitions), projection.ByHour, end.Add(-time.Duration(hours-1)*time.Hour), now)
	if err != nil {
		return plotData{}, err
	}
	p := plotData{Title: "Usage of " + name + " by the hour", X: sr.Times, Series: []plotSeries{{Label: "loads"}, {Label: "errors"}}}
	if sk := sr.Skill(name); sk != nil {
		p.Series[0].Values, p.Series[1].Values = sk.Loads, sk.Errors
	} else {
		zeros := make([]int, len(sr.Times))
		p.Series[0].Values, p.Series[1].Values = zeros, zeros
	}
	return p, nil
}

// diffRow is one line of a side-by-side diff: the left (older) and
// right (newer) line, each with its number (0: none on that side).
type diffRow struct {
	Kind         string // "same", "del", "add", "change"
	LeftN, RighN int
	Left, Right  string
}

// fileDiff is one file of a diff.
type fileDiff struct {
	Path string
	What string // added, removed, changed
	Note string // why its lines are not shown
	Rows []diffRow
}

// diffData is the diff page.
type diffData struct {
	Name, In     string
	A, B         uint64
	DigestA      string
	DigestB      string
	Files        []fileDiff
	Same         bool
	Revs         []uint64
	Cut          bool
	MaxDiffBytes int
}

func (d diffData) PageTitle() (string, string) { return d.Name + ": diff", "skills" }

// maxDiffFile is the largest file the diff shows line by line;
// maxDiffRows bounds the rows of one page.
const (
	maxDiffFile = 1 << 20
	maxDiffRows = 20000
)

func (s *Server) diffPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	name, pl, err := s.placeOf(r, q.Get("in"))
	if err != nil {
		return err
	}
	if pl.pb == nil {
		return BadRequest("a folder skill has no revisions to compare")
	}
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	hist, err := pl.pb.History(ctx, pl.Scope, name)
	if store.NotFound(err) {
		return NotFound("skill %q in %s: not in the store", name, pl.In)
	}
	if err != nil {
		return err
	}
	d := diffData{Name: name, In: pl.In, MaxDiffBytes: maxDiffFile}
	for _, h := range hist {
		if !h.Removed && h.Err == nil {
			d.Revs = append(d.Revs, h.Rev)
		}
	}
	if d.A, err = revParam(q.Get("a")); err != nil {
		return err
	}
	if d.B, err = revParam(q.Get("b")); err != nil {
		return err
	}
	if d.B == 0 && len(d.Revs) > 0 {
		d.B = d.Revs[len(d.Revs)-1]
	}
	if d.A == 0 {
		// The kept revision before B.
		for _, rev := range d.Revs {
			if rev < d.B {
				d.A = rev
			}
		}
	}
	if d.A == 0 {
		d.A = d.B
	}
	pa, err := pl.pb.Get(ctx, pl.Scope, name, store.At{Rev: d.A})
	if store.NotFound(err) {
		return NotFound("revision %d of %q is not kept", d.A, name)
	}
	if err != nil {
		return err
	}
	pbv, err := pl.pb.Get(ctx, pl.Scope, name, store.At{Rev: d.B})
	if store.NotFound(err) {
		return NotFound("revision %d of %q is not kept", d.B, name)
	}
	if err != nil {
		return err
	}
	d.DigestA, d.DigestB = pa.Record.Digest, pbv.Record.Digest
	fa, err := pl.pb.Files(ctx, pa.Record.Digest)
	if err != nil {
		return fmt.Errorf("revision %d: %w", d.A, err)
	}
	fb, err := pl.pb.Files(ctx, pbv.Record.Digest)
	if err != nil {
		return fmt.Errorf("revision %d: %w", d.B, err)
	}
	d.Files, d.Cut = diffFiles(fa, fb)
	d.Same = len(d.Files) == 0
	s.render(w, r, http.StatusOK, "diff.html", d)
	return nil
}

// revParam reads a revision number from a query value ("" is 0).
func revParam(v string) (uint64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		return 0, BadRequest("revision %q: want a positive integer, the skill's revision", clipText(v))
	}
	return n, nil
}

// diffFiles compares two revisions' files by path: added, removed and
// changed ones, each changed text file line by line; cut says rows were
// left out past maxDiffRows.
func diffFiles(fa, fb []skillstore.File) (out []fileDiff, cut bool) {
	rows := 0
	for _, c := range skillstore.ChangedFiles(fa, fb) {
		da, db := c.A, c.B
		fd := fileDiff{Path: c.Path, What: c.What}
		switch {
		case !isText(da) || !isText(db):
			fd.Note = fmt.Sprintf("binary, or over %d bytes: its lines are not shown", maxDiffFile)
		case rows >= maxDiffRows:
			fd.Note = "not shown: the page holds at most " + strconv.Itoa(maxDiffRows) + " lines"
			cut = true
		default:
			fd.Rows = sideBySide(splitLines(string(da)), splitLines(string(db)))
			if rows+len(fd.Rows) > maxDiffRows {
				fd.Rows = fd.Rows[:maxDiffRows-rows]
				fd.Note = "cut: the page holds at most " + strconv.Itoa(maxDiffRows) + " lines"
				cut = true
			}
			rows += len(fd.Rows)
		}
		out = append(out, fd)
	}
	return out, cut
}

func isText(b []byte) bool {
	return len(b) <= maxDiffFile && utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// sideBySide pairs the lines of a and b: common lines side by side,
// removed lines on the left, added on the right, a removal followed by
// an addition on one row (a change). The edit script is replay's line
// diff (skillstream replay and skills diff print the same), bounded as
// it is: past its table's bound the differing middle is shown as
// removed, then added.
func sideBySide(a, b []string) []diffRow {
	ops := replay.LineEdits(a, b)
	head := 0
	for head < len(ops) && ops[head] == ' ' {
		head++
	}
	tail := 0
	for tail < len(ops)-head && ops[len(ops)-1-tail] == ' ' {
		tail++
	}
	ops = ops[head : len(ops)-tail]
	var rows []diffRow
	for i := 0; i < head; i++ {
		rows = append(rows, diffRow{Kind: "same", LeftN: i + 1, RighN: i + 1, Left: a[i], Right: b[i]})
	}
	ai, bi := head, head
	var dels, adds []int
	flush := func() {
		for k := 0; k < max(len(dels), len(adds)); k++ {
			r := diffRow{Kind: "change"}
			if k < len(dels) {
				r.LeftN, r.Left = dels[k]+1, a[dels[k]]
			} else {
				r.Kind = "add"
			}
			if k < len(adds) {
				r.RighN, r.Right = adds[k]+1, b[adds[k]]
			} else {
				r.Kind = "del"
			}
			rows = append(rows, r)
		}
		dels, adds = dels[:0], adds[:0]
	}
	for _, o := range ops {
		switch o {
		case ' ':
			flush()
			rows = append(rows, diffRow{Kind: "same", LeftN: ai + 1, RighN: bi + 1, Left: a[ai], Right: b[bi]})
			ai++
			bi++
		case '-':
			dels = append(dels, ai)
			ai++
		case '+':
			adds = append(adds, bi)
			bi++
		}
	}
	flush()
	for k := 0; k < tail; k++ {
		rows = append(rows, diffRow{Kind: "same", LeftN: ai + k + 1, RighN: bi + k + 1, Left: a[ai+k], Right: b[bi+k]})
	}
	return rows
}
