package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/processor/partition"
	"github.com/skillstream/skillstream/providers/store"
	"github.com/skillstream/skillstream/providers/store/audit"
)

// The operators' actions on a store skill, as the skills commands name
// them.
const (
	ActRollback = "rollback"
	ActRelease  = "release"
	ActPromote  = "promote"
	ActPin      = "pin"
	ActUnpin    = "unpin"
)

// skillAction is one action asked: on skill Name in the tenant store's
// scope, with its arguments (Rev: the revision rolled back to, released
// or pinned; Share: a release's share in basis points).
type skillAction struct {
	Kind  string
	Name  string
	In    string
	Scope skillstore.Scope
	Rev   uint64
	Share int
	// ShareText is the share as asked ("10%").
	ShareText string
}

// What is the action as a skills command line would say it, for the
// audit.
func (a skillAction) What() string {
	s := "skills " + a.Kind + " " + a.Name + " --scope " + a.In
	switch a.Kind {
	case ActRollback:
		if a.Rev > 0 {
			s += fmt.Sprintf(" --to %d", a.Rev)
		}
	case ActRelease:
		s += fmt.Sprintf(" %d --canary %s", a.Rev, store.FormatShare(a.Share))
	case ActPin:
		s += fmt.Sprintf(" --to %d", a.Rev)
	}
	return s
}

// claimKey is the index key the action writes, as the audit names it.
func (a skillAction) claimKey() (op, key string) {
	switch a.Kind {
	case ActRollback:
		return audit.OpRollback, a.Scope.Key(a.Name)
	case ActPin, ActUnpin:
		return audit.OpRelease, store.PinKey(a.Scope, a.Name)
	}
	return audit.OpRelease, store.ReleaseKey(a.Scope, a.Name)
}

// parseAction reads an action from the path and the values (the query
// of the confirmation, the form of the POST).
func (s *Server) parseAction(r *http.Request, v url.Values) (skillAction, error) {
	kind := r.PathValue("action")
	switch kind {
	case ActRollback, ActRelease, ActPromote, ActPin, ActUnpin:
	default:
		return skillAction{}, NotFound("no skill page or action %q", clipText(kind))
	}
	name, pl, err := s.placeOf(r, v.Get("in"))
	if err != nil {
		return skillAction{}, err
	}
	if pl.Source != SourceStore {
		return skillAction{}, BadRequest("%s: only the tenant's own store skills take actions here (the library is read only; folders are edited on disk)", kind)
	}
	a := skillAction{Kind: kind, Name: name, In: pl.In, Scope: pl.Scope}
	if a.Rev, err = revParam(v.Get("rev")); err != nil {
		return skillAction{}, err
	}
	switch kind {
	case ActRelease:
		if a.Rev == 0 {
			return skillAction{}, BadRequest("release: which revision? (rev, the release's candidate)")
		}
		a.ShareText = strings.TrimSpace(v.Get("share"))
		if a.ShareText == "" {
			return skillAction{}, BadRequest("release: the share of sessions is missing (share, as 10%% or 2.5%%)")
		}
		if !strings.HasSuffix(a.ShareText, "%") {
			a.ShareText += "%"
		}
		if a.Share, err = store.ParseShare(a.ShareText); err != nil {
			return skillAction{}, BadRequest("release: share %q: %v", clipText(a.ShareText), err)
		}
	case ActPin:
		if a.Rev == 0 {
			return skillAction{}, BadRequest("pin: which revision? (rev)")
		}
	case ActPromote, ActUnpin:
		if a.Rev != 0 {
			return skillAction{}, BadRequest("%s takes no revision", kind)
		}
	}
	return a, nil
}

// confirmData is the confirmation page of an action.
type confirmData struct {
	Action skillAction
	What   string
	// Status is the skill's release state now.
	Status store.Status
	// Live is how many sessions are live (a pre-step within Window);
	// AtLeast says the count stopped at its bound; LiveNote why it is
	// not known. Reach is how many of them the action reaches.
	Live     int
	AtLeast  bool
	LiveNote string
	Window   string
	Reach    string
	// Scope says whose sessions see the change.
	Scope string
}

func (d confirmData) PageTitle() (string, string) { return "Confirm " + d.Action.Kind, "skills" }

func (s *Server) confirmPage(w http.ResponseWriter, r *http.Request) error {
	a, err := s.parseAction(r, r.URL.Query())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	st, err := s.cfg.Sources.Store.Status(ctx, a.Scope, a.Name)
	if store.NotFound(err) {
		return NotFound("skill %q in %s: not in the store", a.Name, a.In)
	}
	if err != nil {
		return err
	}
	d := confirmData{Action: a, What: describe(a, st), Status: st, Window: minutes(s.liveWindow())}
	if a.Scope == skillstore.Global {
		d.Scope = "every session of the tenant"
	} else {
		d.Scope = "the sessions of project " + a.Scope.ProjectID() + " (the count below is of every live session: the sessions stream does not say which project a session is of)"
	}
	d.Live, d.AtLeast, err = s.liveSessions(ctx)
	if err != nil {
		d.LiveNote = err.Error()
	}
	more := ""
	if d.AtLeast {
		more = "at least "
	}
	switch a.Kind {
	case ActRelease:
		reach := d.Live * a.Share / catalog.FullShare
		d.Reach = fmt.Sprintf("about %s%d of %d live sessions (%s of them)", more, reach, d.Live, store.FormatShare(a.Share))
	default:
		d.Reach = fmt.Sprintf("%s%d live sessions", more, d.Live)
	}
	s.render(w, r, http.StatusOK, "confirm.html", d)
	return nil
}

// describe says what the action will do to the skill in st.
func describe(a skillAction, st store.Status) string {
	switch a.Kind {
	case ActRollback:
		if st.Channel != store.ChannelStable {
			if a.Rev != 0 {
				return fmt.Sprintf("A %s is in progress: rolling back to a revision is refused while it lasts; roll back without a revision to end it.", st.Channel)
			}
			return fmt.Sprintf("End the %s of %s: every session is back on its stable revision.", st.Channel, a.Name)
		}
		if a.Rev == 0 {
			return fmt.Sprintf("Publish the files of the newest earlier revision of %s with other files as its next revision.", a.Name)
		}
		return fmt.Sprintf("Publish the files of revision %d of %s as its next revision: every session not pinned gets them at its next pre-step.", a.Rev, a.Name)
	case ActRelease:
		return fmt.Sprintf("Offer revision %d of %s, the release's candidate, to %s of the sessions (the canary); the others keep the stable revision.", a.Rev, a.Name, store.FormatShare(a.Share))
	case ActPromote:
		return fmt.Sprintf("Make the canary's candidate of %s stable for every session.", a.Name)
	case ActPin:
		return fmt.Sprintf("Hold %s at revision %d for the sessions of %s, whatever its release or newest revision.", a.Name, a.Rev, a.In)
	case ActUnpin:
		return fmt.Sprintf("Remove the pin of %s for %s: its sessions get the release state's or newest revision again.", a.Name, a.In)
	}
	return ""
}

func (s *Server) actPage(w http.ResponseWriter, r *http.Request) error {
	a, err := s.parseAction(r, r.PostForm)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	pb := s.cfg.Sources.Store
	switch a.Kind {
	case ActRollback:
		var c store.Change
		c, _, err = pb.Rollback(ctx, a.Scope, a.Name, store.At{Rev: a.Rev})
		if err == nil && c.Action == store.Unchanged && !c.Ended {
			err = fmt.Errorf("skill %q: revision %d has the current files: nothing to roll back", a.Name, a.Rev)
			s.audit(r, a.What(), err)
			return &httpError{http.StatusConflict, err}
		}
	case ActRelease:
		_, err = pb.Release(ctx, a.Scope, a.Name, a.Rev, a.Share, "console ("+s.who(r)+")")
	case ActPromote:
		_, err = pb.Promote(ctx, a.Scope, a.Name)
	case ActPin:
		_, err = pb.Pin(ctx, a.Scope, a.Name, store.At{Rev: a.Rev})
	case ActUnpin:
		_, err = pb.Unpin(ctx, a.Scope, a.Name)
	}
	s.audit(r, a.What(), err)
	if err != nil {
		switch {
		case store.NotFound(err), errors.Is(err, store.ErrNotPinned):
			return &httpError{http.StatusNotFound, err}
		case errors.Is(err, store.ErrChanged):
			return &httpError{http.StatusConflict, err}
		}
		return &httpError{http.StatusBadRequest, err}
	}
	to := s.cfg.Base + "skills/" + url.PathEscape(a.Name) + "?in=" + url.QueryEscape(a.In) + "&done=" + a.Kind
	if err := s.claim(ctx, r, a); err != nil {
		to += "&unaudited=1"
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// who names the signed-in person for a release's By: the role and the
// remote address (a console token names no person).
func (s *Server) who(r *http.Request) string {
	sess, _ := sessionOf(r.Context())
	return sess.role.String() + "@" + r.RemoteAddr
}

// claim asks the audit service to record the action's write as the
// console's connection's, as the skills commands do; a console without
// an audit connection only logs it (s.audit). The error says the write
// is not in the trail.
func (s *Server) claim(ctx context.Context, r *http.Request, a skillAction) error {
	nc := s.cfg.Sources.AuditConn
	if nc == nil {
		return nil
	}
	op, key := a.claimKey()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	detail := "console " + s.who(r) + ": " + a.What()
	if len(detail) > audit.MaxDetail {
		detail = detail[:audit.MaxDetail]
	}
	rec, err := audit.Submit(ctx, nc, audit.Claim{Op: op, Store: audit.StoreTenant, Key: key, Name: a.Name, Detail: detail})
	if err != nil {
		s.log.Warn("console: action not audited", "tenant", s.cfg.Tenant, "action", a.What(), "err", err)
		return err
	}
	s.log.Info("console: action audited", "tenant", s.cfg.Tenant, "action", a.What(), "as", rec.Who(), "revision", rec.Revision)
	return nil
}

// minutes writes d as people say it: "15 minutes", "90 seconds".
func minutes(d time.Duration) string {
	if d%time.Minute == 0 {
		if d == time.Minute {
			return "minute"
		}
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return fmt.Sprintf("%d seconds", d/time.Second)
}

func (s *Server) liveWindow() time.Duration {
	if w := s.cfg.Sources.Skills.LiveWindow; w > 0 {
		return w
	}
	return DefaultLiveWindow
}

// liveSessions counts the sessions with a pre-step within the live
// window, reading the pre-step records of the sessions stream (of every
// partition, in turn) since then (headers only), at most MaxLiveScan of
// them in all: past that the count is a lower bound (atLeast).
func (s *Server) liveSessions(ctx context.Context) (n int, atLeast bool, err error) {
	src := s.cfg.Sources
	places := src.Partitions
	if len(places) == 0 {
		prefix, err := streamPrefix(ctx, src.JS, src.Stream)
		if err != nil {
			return 0, false, err
		}
		places = []partition.Place{{Stream: src.Stream, Prefix: prefix}}
	}
	limit := src.Skills.MaxLiveScan
	if limit <= 0 {
		limit = DefaultMaxLiveScan
	}
	since := s.cfg.Now().Add(-s.liveWindow())
	seen := map[string]struct{}{}
	read := 0
	for _, p := range places {
		more, err := s.liveIn(ctx, p, since, limit, &read, seen)
		if err != nil {
			return len(seen), false, fmt.Errorf("stream %s: %w", p.Stream, err)
		}
		if more {
			return len(seen), true, nil
		}
	}
	return len(seen), false, nil
}

// liveIn adds to seen the sessions of p's pre-steps since then, while
// *read stays under limit; more: it stopped at the limit.
func (s *Server) liveIn(ctx context.Context, p partition.Place, since time.Time, limit int, read *int, seen map[string]struct{}) (more bool, err error) {
	src := s.cfg.Sources
	cons, err := src.JS.OrderedConsumer(ctx, p.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.TriggerFilterIn(src.Layout, p.Prefix, events.KindPreStep)},
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
		OptStartTime:   &since,
		HeadersOnly:    true,
	})
	if err != nil {
		return false, err
	}
	for *read < limit {
		batch, err := cons.FetchNoWait(min(limit-*read, 1000))
		if err != nil {
			return false, err
		}
		got, pending := 0, uint64(0)
		for m := range batch.Messages() {
			got++
			*read++
			if md, err := m.Metadata(); err == nil {
				pending = md.NumPending
			}
			if sid, _, err := events.ParseSubjectIn(src.Layout, p.Prefix, m.Subject()); err == nil {
				seen[sid] = struct{}{}
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, context.DeadlineExceeded) {
			return false, err
		}
		if got == 0 || pending == 0 {
			return false, nil
		}
	}
	return true, nil
}
