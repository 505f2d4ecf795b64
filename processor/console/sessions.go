package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/partition"
	"github.com/skillstream/skillstream/processor/replay"
)

// SessionSources are what the sessions pages read besides Sources' JS,
// Stream, Layout, Prefix and Registry: what the processor serves with,
// for a replay against today's skills.
type SessionSources struct {
	// ToolOwner is the serving processor's tool owner ("": skillstream).
	ToolOwner string
	// Catalog are the catalog options the processor serves with; a
	// replay takes the session's recorded options over them where the
	// session says them, as replay --live does. Zero: the defaults.
	Catalog catalog.Options
}

// maxSessionEvents is the longest session the timeline and the replay
// read (the export streams any, up to maxExportBytes): a longer one is
// for skillstream history and replay. A variable for tests.
var maxSessionEvents uint64 = 20000

// Bounds of the sessions pages' reads.
const (
	// recentWindow is how many of the stream's newest records the list
	// of recent sessions looks through; recentMax how many it shows.
	recentWindow = 20000
	recentMax    = 50
	// maxTimelineSteps is the most steps a timeline shows.
	maxTimelineSteps = 1000
	// maxExportBytes bounds an export download.
	maxExportBytes = 256 << 20
	sessionTimeout = 30 * time.Second
)

// sessionPages are the sessions pages' routes.
func (s *Server) sessionPages() []page {
	return []page{
		{method: "GET", path: "sessions", role: RoleViewer, h: s.sessionsPage},
		{method: "GET", path: "sessions/{id}", role: RoleViewer, h: s.sessionPage},
		{method: "GET", path: "sessions/{id}/export", role: RoleViewer, h: s.sessionExport},
		{method: "GET", path: "sessions/{id}/replay", role: RoleViewer, h: s.sessionReplay},
	}
}

// recent is a session of the list of recent ones.
type recent struct {
	ID    string
	Last  time.Time
	Steps int
}

type sessionsView struct {
	ID     string
	Recent []recent
	Window int
	Err    string
}

func (sessionsView) PageTitle() (string, string) { return "Sessions", "sessions" }

func (s *Server) checkStream() error {
	if s.cfg.Sources.JS == nil || s.cfg.Sources.Stream == "" {
		return errors.New("this console has no sessions stream")
	}
	return nil
}

func (s *Server) prefix() string {
	if p := s.cfg.Sources.Prefix; p != "" {
		return p
	}
	return events.DefaultPrefix
}

// place is where session sid is kept: its stream and subject prefix.
func (s *Server) place(sid string) (stream, prefix string) {
	if f := s.cfg.Sources.Place; f != nil {
		return f(sid)
	}
	return s.cfg.Sources.Stream, s.prefix()
}

// places are the streams (and their prefixes) of every session: each
// partition's, or the one stream.
func (s *Server) places() []partition.Place {
	if ps := s.cfg.Sources.Partitions; len(ps) > 0 {
		return ps
	}
	return []partition.Place{{Stream: s.cfg.Sources.Stream, Prefix: s.prefix()}}
}

// sessionID reads the session id of a request's path: hostile input,
// checked against the stream's session layout.
func (s *Server) sessionID(r *http.Request) (string, error) {
	sid := r.PathValue("id")
	if err := events.CheckSessionIn(s.cfg.Sources.Layout, sid); err != nil {
		return "", BadRequest("session: %v", err)
	}
	return sid, nil
}

func (s *Server) sessionsPage(w http.ResponseWriter, r *http.Request) error {
	v := sessionsView{Window: recentWindow}
	if id := r.URL.Query().Get("id"); id != "" {
		if err := events.CheckSessionIn(s.cfg.Sources.Layout, id); err != nil {
			return BadRequest("session: %v", err)
		}
		http.Redirect(w, r, s.cfg.Base+"sessions/"+url.PathEscape(id), http.StatusSeeOther)
		return nil
	}
	if err := s.checkStream(); err != nil {
		v.Err = err.Error()
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), sessionTimeout)
		defer cancel()
		rs, err := s.recentSessions(ctx)
		if err != nil {
			return fmt.Errorf("recent sessions: %w", err)
		}
		v.Recent = rs
	}
	s.render(w, r, http.StatusOK, "sessions.html", v)
	return nil
}

// recentSessions are the sessions with a pre-step among the newest
// recentWindow records of each sessions stream (of every partition), the
// most recent first, at most recentMax.
func (s *Server) recentSessions(ctx context.Context) ([]recent, error) {
	byID := map[string]*recent{}
	for _, p := range s.places() {
		if err := s.recentIn(ctx, p, byID); err != nil {
			return nil, fmt.Errorf("stream %s: %w", p.Stream, err)
		}
	}
	out := make([]recent, 0, len(byID))
	for _, rc := range byID {
		out = append(out, *rc)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Last.Equal(out[j].Last) {
			return out[i].Last.After(out[j].Last)
		}
		return out[i].ID < out[j].ID
	})
	return out[:min(len(out), recentMax)], nil
}

// recentIn adds to byID the sessions with a pre-step among the newest
// recentWindow records of p's stream.
func (s *Server) recentIn(ctx context.Context, p partition.Place, byID map[string]*recent) error {
	src := s.cfg.Sources
	st, err := src.JS.Stream(ctx, p.Stream)
	if err != nil {
		return err
	}
	info := st.CachedInfo()
	last := info.State.LastSeq
	if last == 0 {
		return nil
	}
	start := uint64(1)
	if last > recentWindow {
		start = last - recentWindow + 1
	}
	start = max(start, info.State.FirstSeq)
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.TriggerFilterIn(src.Layout, p.Prefix, events.KindPreStep)},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy, OptStartSeq: start,
		InactiveThreshold: 30 * time.Second,
	})
	if err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = st.DeleteConsumer(dctx, cons.CachedInfo().Name)
	}()
	if cons.CachedInfo().NumPending == 0 {
		return nil
	}
	batch, err := cons.FetchNoWait(recentWindow)
	if err != nil {
		return err
	}
	for msg := range batch.Messages() {
		md, err := msg.Metadata()
		if err != nil {
			continue
		}
		sid, _, err := events.ParseSubjectIn(src.Layout, p.Prefix, msg.Subject())
		if err != nil {
			continue
		}
		rc := byID[sid]
		if rc == nil {
			rc = &recent{ID: sid}
			byID[sid] = rc
		}
		rc.Steps++
		rc.Last = md.Timestamp.UTC()
		if md.NumPending == 0 {
			break
		}
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
		return err
	}
	return nil
}

// sessionSize counts a session's records, to refuse reading one past the
// pages' bound; zero: no such session.
func (s *Server) sessionSize(ctx context.Context, sid string) (uint64, error) {
	stream, prefix := s.place(sid)
	st, err := s.cfg.Sources.JS.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(events.SessionWildcard(prefix, sid)))
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n, nil
}

// openSession checks a session before a page reads it: the stream, the
// id, and, when bounded, its size within maxSessionEvents.
func (s *Server) openSession(ctx context.Context, r *http.Request, bounded bool) (string, uint64, error) {
	sid, err := s.sessionID(r)
	if err != nil {
		return "", 0, err
	}
	if err := s.checkStream(); err != nil {
		return "", 0, err
	}
	n, err := s.sessionSize(ctx, sid)
	if err != nil {
		return "", 0, fmt.Errorf("session %s: %w", sid, err)
	}
	if n == 0 {
		stream, _ := s.place(sid)
		return "", 0, NotFound("session %s has no events in stream %s", sid, stream)
	}
	if bounded && n > maxSessionEvents {
		return "", 0, &httpError{http.StatusRequestEntityTooLarge, fmt.Errorf("session %s has %d events, more than the console reads (%d): skillstream history --session %s and replay --live read it whole",
			sid, n, maxSessionEvents, sid)}
	}
	return sid, n, nil
}

func (s *Server) toolOwner() string {
	if o := s.cfg.Sources.Sessions.ToolOwner; o != "" {
		return o
	}
	return "skillstream"
}

// stepView is one step of a timeline.
type stepView struct {
	replay.Delta
	// Before: the searches and loads made before the first pre-step.
	Before bool
}

// shownView is what the model was shown at one step: the catalog it saw
// after the step, and every output the step's triggers got, as recorded.
type shownView struct {
	Step    string
	Seen    *replay.CatalogView
	Why     string // no catalog visible: why
	Outputs []replay.Step
}

type sessionView struct {
	ID, Tenant string
	Events     uint64
	Steps      []stepView
	Cut        int // steps past maxTimelineSteps, not shown
	Shown      *shownView
	StepAsked  string
	Replay     *replayView
}

func (sessionView) PageTitle() (string, string) { return "Session", "sessions" }

// errStop ends a read early.
var errStop = errors.New("stop")

func (s *Server) sessionPage(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), sessionTimeout)
	defer cancel()
	sid, n, err := s.openSession(ctx, r, true)
	if err != nil {
		return err
	}
	v := sessionView{ID: sid, Events: n, StepAsked: r.URL.Query().Get("step")}
	if len(v.StepAsked) > 256 {
		return BadRequest("step: longer than 256 bytes")
	}
	var (
		deltas replay.Deltas
		shown  *shownView
	)
	add := func(d *replay.Delta) {
		if d == nil {
			return
		}
		if len(v.Steps) >= maxTimelineSteps {
			v.Cut++
			return
		}
		v.Steps = append(v.Steps, stepView{Delta: *d, Before: d.Seq == 0 && d.Step == ""})
	}
	opts := replay.Options{ToolOwner: s.toolOwner(), HistoryOnly: true, Layout: s.cfg.Sources.Layout, Emit: func(st replay.Step) error {
		if v.StepAsked != "" {
			switch {
			case st.Kind == replay.TriggerPreStep && st.ID == v.StepAsked:
				// A retry of the step replaces it.
				shown = &shownView{Step: st.ID, Seen: st.Seen, Outputs: []replay.Step{st}}
				if st.Seen == nil {
					shown.Why = whyNone(st.Published, st.MaskedBy)
				}
			case st.Kind == replay.TriggerPreStep && shown != nil:
				return errStop // the next step
			case shown != nil && len(shown.Outputs) < maxTimelineSteps:
				shown.Outputs = append(shown.Outputs, st)
			}
			return nil
		}
		add(deltas.Add(st))
		return nil
	}}
	stream, prefix := s.place(sid)
	_, err = replay.Live(ctx, s.cfg.Sources.JS, stream, prefix, sid, opts)
	if err != nil && !errors.Is(err, errStop) {
		return fmt.Errorf("read session %s: %w", sid, err)
	}
	if v.StepAsked != "" {
		if shown == nil {
			return NotFound("step %q is not in session %s", v.StepAsked, sid)
		}
		v.Shown = shown
	} else {
		add(deltas.Finish())
	}
	s.render(w, r, http.StatusOK, "session.html", v)
	return nil
}

// whyNone says why no catalog was visible at a step.
func whyNone(published bool, maskedBy uint64) string {
	if published {
		return fmt.Sprintf("every catalog was masked by the compaction at seq %d", maskedBy)
	}
	return "no catalog had been published yet"
}

// limitWriter fails a write past its limit.
type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		return 0, fmt.Errorf("the export passed %d bytes: use skillstream export", int64(maxExportBytes))
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}

// sessionExport downloads the session's recording: the JSON lines
// skillstream export writes.
func (s *Server) sessionExport(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*sessionTimeout)
	defer cancel()
	sid, _, err := s.openSession(ctx, r, false)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	// The id is checked: letters, digits, _ - and one dot at most.
	w.Header().Set("Content-Disposition", `attachment; filename="`+sid+`.jsonl"`)
	src := s.cfg.Sources
	stream, prefix := s.place(sid)
	n, err := replay.Export(ctx, src.JS, replay.ExportOptions{Stream: stream, Prefix: prefix, Layout: src.Layout, Session: sid, Now: s.cfg.Now()},
		&limitWriter{w: w, n: maxExportBytes})
	if err != nil {
		// Headers are sent: the download ends short, which its missing
		// end record shows (replay refuses it).
		s.log.Warn("console: export", "session", sid, "events", n, "err", err)
	}
	return nil
}

// replayView is a replay of a session against today's skills.
type replayView struct {
	Settings []replay.Setting
	Steps    []replay.Step
	Cut      int
	Summary  replay.Summary
}

// sessionReplay replays the session against the skills the registry
// offers now, as replay --live does, and shows where the model text
// would differ.
func (s *Server) sessionReplay(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), sessionTimeout)
	defer cancel()
	sid, _, err := s.openSession(ctx, r, true)
	if err != nil {
		return err
	}
	src := s.cfg.Sources
	if src.Registry == nil {
		return errors.New("this console has no registry of today's skills to replay against")
	}
	stream, prefix := s.place(sid)
	rec, err := replay.SessionOptions(ctx, src.JS, stream, prefix, src.Layout, sid)
	if err != nil {
		return fmt.Errorf("session %s: the options it was recorded under: %w", sid, err)
	}
	base := src.Sessions.Catalog
	if base == (catalog.Options{}) {
		base = catalog.DefaultOptions()
	}
	catOpts, settings := replay.MergeOptions(base, func(string) bool { return false }, rec)
	if err := catOpts.Validate(); err != nil {
		return fmt.Errorf("the options session %s was recorded under: %w", sid, err)
	}
	v := replayView{Settings: settings}
	opts := replay.Options{ToolOwner: s.toolOwner(), Catalog: catOpts, Skills: src.Registry, Bodies: catOpts.SearchBodies, Recording: rec,
		Tenant: s.cfg.Tenant, Layout: src.Layout, Emit: func(st replay.Step) error {
			if len(v.Steps) >= maxTimelineSteps {
				v.Cut++
				return nil
			}
			v.Steps = append(v.Steps, st)
			return nil
		}}
	if v.Summary, err = replay.Live(ctx, src.JS, stream, prefix, sid, opts); err != nil {
		return fmt.Errorf("replay session %s: %w", sid, err)
	}
	s.render(w, r, http.StatusOK, "session.html", sessionView{ID: sid, Replay: &v})
	return nil
}
