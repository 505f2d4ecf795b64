package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/store"
)

// SkillSources are what the skills pages read beyond the shared sources.
type SkillSources struct {
	// LiveWindow is how recent a session's last pre-step must be for the
	// session to count as live in an action's blast radius (default 15
	// minutes).
	LiveWindow time.Duration
	// MaxLiveScan bounds the pre-step records read to count live sessions
	// (default 100000); past it the count is a lower bound, and says so.
	MaxLiveScan int
}

// The defaults of SkillSources.
const (
	DefaultLiveWindow  = 15 * time.Minute
	DefaultMaxLiveScan = 100000
)

// Where a skill comes from, as the skills pages name it.
const (
	SourceStore   = "store"
	SourceLibrary = "library"
	SourceFolder  = "folder"
)

// statusWorkers bounds the store reads the skills page makes at once.
const statusWorkers = 8

// pageTimeout bounds the reads of one page.
const pageTimeout = 20 * time.Second

// skillPages are the skills pages' routes.
func (s *Server) skillPages() []page {
	return []page{
		{method: "GET", path: "skills", role: RoleViewer, h: s.skillsPage},
		{method: "GET", path: "skills/{name}", role: RoleViewer, h: s.skillPage},
		{method: "GET", path: "skills/{name}/diff", role: RoleViewer, h: s.diffPage},
		{method: "GET", path: "skills/{name}/{action}", role: RoleOperator, h: s.confirmPage},
		{method: "POST", path: "skills/{name}/{action}", role: RoleOperator, h: s.actPage},
	}
}

// skillRow is one line of the skills page.
type skillRow struct {
	Name        string
	Description string
	// Source is SourceStore, SourceLibrary or SourceFolder; In names the
	// skill's place for the skill page: a store scope ("global",
	// "project/<id>"), "library", or "folder".
	Source, In string
	// Detail says more of the source: a folder skill's catalog source
	// (project, user, custom, bundled).
	Detail string
	// Rev is the newest revision's number (0 outside the stores).
	Rev uint64
	// State is the release state: stable, draft, canary or removed;
	// Share a canary's share; Pins the scopes pinning it.
	State string
	Share string
	Pins  []string
	// Signature is "signed", "trusted", "untrusted", "revoked" or
	// "unsigned"; Key the signing key; Why why it is not trusted.
	Signature string
	Key       string
	Why       string
	// Size is the skill's bytes (every file, for store skills; the
	// skill text, for folder skills); Tokens its estimate (Size/4).
	Size   int64
	Tokens int64
	// LastUsed is its last load or invocation the usage projection knows
	// (zero: none); Loads7d its loads in the last 7 days.
	LastUsed time.Time
	Loads7d  int
	// Broken says why the row is incomplete.
	Broken string
}

// skillsData is the skills page.
type skillsData struct {
	Rows []skillRow
	// Total is how many skills there are before the filter.
	Total int
	// Query is the filter as asked.
	Source, State, Q string
	// Notes say what a part of the page could not read.
	Notes []string
	// Usage says the usage columns are filled (a projection is read).
	Usage bool
}

func (skillsData) PageTitle() (string, string) { return "Skills", "skills" }

// The filter's values.
var (
	sourceFilters = []string{"", SourceStore, SourceLibrary, SourceFolder}
	stateFilters  = []string{"", store.ChannelStable, store.ChannelDraft, store.ChannelCanary, "pinned"}
)

func (s *Server) skillsPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	d := skillsData{Source: q.Get("source"), State: q.Get("state"), Q: strings.TrimSpace(q.Get("q"))}
	if !slices.Contains(sourceFilters, d.Source) {
		return BadRequest("source %q: want store, library or folder", clipText(d.Source))
	}
	if !slices.Contains(stateFilters, d.State) {
		return BadRequest("state %q: want stable, draft, canary or pinned", clipText(d.State))
	}
	if len(d.Q) > 200 {
		return BadRequest("search text of %d bytes: at most 200", len(d.Q))
	}
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	rows, notes := s.readSkills(ctx)
	d.Notes = notes
	d.Total = len(rows)
	if s.cfg.Sources.UsageBucket != "" && s.cfg.Sources.JS != nil {
		if err := s.addUsage(ctx, rows); err != nil {
			d.Notes = append(d.Notes, "usage: "+err.Error())
		} else {
			d.Usage = true
		}
	} else {
		d.Notes = append(d.Notes, "usage: no usage projection is configured: last used and loads are not shown")
	}
	needle := strings.ToLower(d.Q)
	for _, row := range rows {
		if d.Source != "" && row.Source != d.Source {
			continue
		}
		if d.State != "" && !(row.State == d.State || d.State == "pinned" && len(row.Pins) > 0) {
			continue
		}
		if needle != "" && !strings.Contains(strings.ToLower(row.Name), needle) && !strings.Contains(strings.ToLower(row.Description), needle) {
			continue
		}
		d.Rows = append(d.Rows, row)
	}
	s.render(w, r, http.StatusOK, "skills.html", d)
	return nil
}

// readSkills lists every skill of the tenant: the store's (every scope),
// the library's and the folders' the registry offers, each with what the
// page shows of it; notes say what could not be read.
func (s *Server) readSkills(ctx context.Context) ([]skillRow, []string) {
	src := s.cfg.Sources
	var rows []skillRow
	var notes []string
	if src.Store != nil {
		rs, err := storeRows(ctx, src.Store, SourceStore)
		if err != nil {
			notes = append(notes, "store: "+err.Error())
		}
		rows = append(rows, rs...)
	}
	if src.Library != nil {
		rs, err := storeRows(ctx, src.Library, SourceLibrary)
		if err != nil {
			notes = append(notes, "library: "+err.Error())
		}
		rows = append(rows, rs...)
	}
	if src.Registry != nil {
		rs, err := s.folderRows(ctx)
		if err != nil {
			notes = append(notes, "folders: "+err.Error())
		}
		rows = append(rows, rs...)
	}
	if src.Store == nil && src.Library == nil && src.Registry == nil {
		notes = append(notes, "no skill source is configured")
	}
	return rows, notes
}

// storeRows are the skills of pb, every scope, each with its release
// state, pins and signature state.
func storeRows(ctx context.Context, pb *store.Publisher, source string) ([]skillRow, error) {
	ps, err := pb.ListAll(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]skillRow, len(ps))
	var wg sync.WaitGroup
	sem := make(chan struct{}, statusWorkers)
	for i, p := range ps {
		in := p.Scope.String()
		if source == SourceLibrary {
			in = SourceLibrary
		}
		rows[i] = skillRow{Name: p.Record.Name, Description: p.Record.Description, Source: source, In: in,
			Rev: p.Rev, Size: p.Record.Size, Tokens: p.Record.Size / 4, State: store.ChannelStable}
		rows[i].Signature, rows[i].Key, rows[i].Why = signatureOf(p.Record, nil)
		wg.Add(1)
		go func(row *skillRow, sc skillstore.Scope) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			st, err := pb.Status(ctx, sc, row.Name)
			if err != nil {
				row.Broken = err.Error()
				return
			}
			row.applyStatus(st)
		}(&rows[i], p.Scope)
	}
	wg.Wait()
	return rows, nil
}

// applyStatus fills the row's release, pin and trust state from st.
func (row *skillRow) applyStatus(st store.Status) {
	row.State = st.Channel
	if st.Head == nil {
		row.State = "removed"
	}
	if st.Channel == store.ChannelCanary {
		row.Share = store.FormatShare(st.Share)
	}
	for _, p := range st.Pins {
		row.Pins = append(row.Pins, fmt.Sprintf("%s at rev %d", p.Scope, p.Rev))
	}
	if st.Trust != nil {
		row.Signature, row.Key, row.Why = trustOf(st.Trust)
	}
	if len(st.Malformed) > 0 {
		row.Broken = strings.Join(st.Malformed, "; ")
	}
}

// signatureOf is the signature state of rec without a policy's word:
// signed by its key, or unsigned.
func signatureOf(rec store.Record, _ *store.TrustStatus) (state, key, why string) {
	if rec.Signature == nil {
		return "unsigned", "", ""
	}
	return "signed", rec.Signature.Key, ""
}

// trustOf is the signature state the store's policy gives.
func trustOf(t *store.TrustStatus) (state, key, why string) {
	switch {
	case t.Revoked:
		return "revoked", t.Key, t.Reason
	case t.Key == "" && t.Trusted:
		return "unsigned", "", ""
	case t.Key == "":
		return "unsigned", "", t.Reason
	case t.Trusted:
		return "trusted", t.Key, ""
	}
	return "untrusted", t.Key, t.Reason
}

// folderRows are the skills the registry offers from folders (and the
// bundled ones) for a session without a working directory: the store's
// and the library's are listed from their stores.
func (s *Server) folderRows(ctx context.Context) ([]skillRow, error) {
	reg := s.cfg.Sources.Registry
	snap, err := reg.Snapshot(ctx, catalog.Query{})
	if err != nil {
		return nil, err
	}
	var rows []skillRow
	for _, sum := range snap.Skills {
		switch sum.Source {
		case catalog.SourceStoreGlobal, catalog.SourceStoreProject, catalog.SourceLibrary:
			continue
		}
		rows = append(rows, skillRow{Name: sum.Name, Description: sum.Description, Source: SourceFolder, In: SourceFolder,
			Detail: sum.Source, State: store.ChannelStable, Signature: "unsigned"})
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, statusWorkers)
	for i := range rows {
		wg.Add(1)
		go func(row *skillRow) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			sk, err := reg.Load(ctx, row.Name, catalog.Query{})
			if err != nil {
				row.Broken = err.Error()
				return
			}
			row.Size = int64(len(sk.Content))
			row.Tokens = row.Size / 4
		}(&rows[i])
	}
	wg.Wait()
	if !snap.Complete {
		return rows, errors.New("the registry's snapshot is incomplete (a provider failed or did not answer)")
	}
	return rows, nil
}

// streamPrefix is the subject prefix of the sessions stream: the one
// subject it holds, "<prefix>.>".
func streamPrefix(ctx context.Context, js jetstream.JetStream, stream string) (string, error) {
	if js == nil || stream == "" {
		return "", errors.New("no sessions stream is configured")
	}
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return "", fmt.Errorf("stream %s: %w", stream, err)
	}
	for _, subj := range st.CachedInfo().Config.Subjects {
		if p, ok := strings.CutSuffix(subj, ".>"); ok && events.ValidatePrefix(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("stream %s holds subjects %q, not a sessions stream's <prefix>.>", stream, st.CachedInfo().Config.Subjects)
}

// addUsage fills the rows' last use (the whole projection) and loads of
// the last 7 days.
func (s *Server) addUsage(ctx context.Context, rows []skillRow) error {
	opts, err := s.usageOptions(ctx)
	if err != nil {
		return err
	}
	week, err := s.readUsage(ctx, opts, s.cfg.Now().Add(-7*24*time.Hour))
	if err != nil {
		return err
	}
	all, err := s.readUsage(ctx, opts, time.Time{})
	if err != nil {
		return err
	}
	loads := map[string]int{}
	for _, su := range week.Skills {
		loads[su.Name] = su.Loads
	}
	last := map[string]time.Time{}
	for _, su := range all.Skills {
		last[su.Name] = su.Last
	}
	for i := range rows {
		rows[i].Loads7d = loads[rows[i].Name]
		rows[i].LastUsed = last[rows[i].Name]
	}
	return nil
}

// clipText shortens what a request brought for an error message.
func clipText(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
