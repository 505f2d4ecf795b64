package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/partition"
	"github.com/skillstream/skillstream/processor/usage"
	"github.com/skillstream/skillstream/processor/usage/projection"
)

// FleetSources are what the fleet page reads besides the shared sources:
// the members are asked over the connection of Sources.JS (the tenant's
// account), where they answer as the skillstream micro service.
type FleetSources struct {
	// Prefix is the sessions' subject prefix (default events.DefaultPrefix):
	// the usage projection is read for it.
	Prefix string
	// Wait is how long the page listens for the members' answers
	// (default 500ms); each member's view answer is bounded by it too.
	Wait time.Duration
}

// Bounds of what the fleet page takes from the members: every answer is
// another process's text.
const (
	maxMembers    = 128
	maxMemberText = 200
	fleetWait     = 500 * time.Millisecond
)

// fleetPages are the fleet page's routes.
func (s *Server) fleetPages() []page {
	return []page{{method: "GET", path: "fleet", role: RoleViewer, h: s.fleet}}
}

// fleetView is the fleet page.
type fleetView struct {
	// Cwd and Project are the query each member was asked about.
	Cwd, Project string
	Members      []fleetMember
	MembersError string
	// Catalogs counts the distinct catalogs the answering members
	// decide for the query: more than one is a divergence.
	Catalogs int
	// Others are members of another stream or consumer group in the
	// account (not this console's).
	Others    int
	Stream    *streamUse
	StreamErr string
	// Partitions are the partition streams, with partitioned sessions
	// (Stream is then not read).
	Partitions []partitionUse
	Account    *accountUse
	AccountErr string
	Consumers  []consumerUse
	Projection *usage.ProjectionInfo
	ProjErr    string
}

func (fleetView) PageTitle() (string, string) { return "Fleet", "fleet" }

// fleetMember is one member of the group and what it serves.
type fleetMember struct {
	Instance, Version, Build, Protocol string
	Stream, Consumer, Prefix, Owner    string
	Store                              string // "" without a skill store
	// Group says it serves this console's stream.
	Group bool
	// The member's answer to the view request: the catalog it would
	// decide now for the query, at which store revision and epoch.
	Digest, Epoch string
	Revision      uint64
	Complete      bool
	ViewError     string
}

// streamUse is the sessions stream's limits and how much of them is used.
type streamUse struct {
	Name                        string
	Subjects                    []string
	Replicas                    int
	Storage, Retention, Discard string
	Msgs, NumSubjects           uint64
	Bytes, MaxBytes, MaxMsgs    int64
	MaxMsgSize                  int64
	MaxAge                      time.Duration
	First, Last                 time.Time
	Consumers, Deleted          int
	BytesPercent, MsgsPercent   float64 // -1 without a limit
}

// MaxAgeText is the age limit, "none" without one.
func (u streamUse) MaxAgeText() string {
	switch d := u.MaxAge; {
	case d <= 0:
		return "none"
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return u.MaxAge.String()
}

// accountUse is the tenant account's JetStream storage and its limits.
type accountUse struct {
	Store, Memory            int64
	MaxStore, MaxMemory      int64
	StorePercent             float64 // -1 without a limit
	Streams, Consumers       int
	MaxStreams, MaxConsumers int
}

// consumerUse is a durable consumer of the stream (the processors', the
// usage projection's): what waits for it.
type consumerUse struct {
	Name                string
	Pending, AckPending uint64
	Redelivered         int
	Waiting             int
	Delivered           uint64
	Paused              bool
}

func (s *Server) fleet(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	v := fleetView{Cwd: q.Get("cwd"), Project: q.Get("project")}
	if len(v.Cwd) > 1024 || len(v.Project) > 256 {
		return BadRequest("the working directory or project asked about is too long")
	}
	src := s.cfg.Sources
	if src.JS == nil {
		v.MembersError = "no connection to the tenant's account: members, stream and projection are not shown"
		s.render(w, r, http.StatusOK, "fleet.html", v)
		return nil
	}
	wait := src.Fleet.Wait
	if wait <= 0 {
		wait = fleetWait
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		ms, err := askMembers(ctx, src.JS.Conn(), wait, catalog.Query{Cwd: v.Cwd, Project: v.Project})
		if err != nil {
			v.MembersError = err.Error()
		}
		for i := range ms {
			ms[i].Group = src.Stream == "" || ms[i].Stream == src.Stream ||
				slices.ContainsFunc(src.Partitions, func(p partition.Place) bool { return ms[i].Stream == p.Stream })
		}
		digests := map[string]bool{}
		for _, m := range ms {
			if !m.Group {
				v.Others++
			} else if m.ViewError == "" && m.Complete {
				digests[m.Digest] = true
			}
		}
		v.Members, v.Catalogs = ms, len(digests)
	})
	if len(src.Partitions) > 0 {
		wg.Go(func() { v.Partitions = partitionsOf(ctx, src.JS, src.Partitions) })
	} else {
		wg.Go(func() { v.Stream, v.Consumers, v.StreamErr = streamOf(ctx, src.JS, src.Stream) })
	}
	wg.Go(func() { v.Account, v.AccountErr = accountOf(ctx, src.JS) })
	wg.Go(func() { v.Projection, v.ProjErr = projectionOf(ctx, src) })
	wg.Wait()
	s.render(w, r, http.StatusOK, "fleet.html", v)
	return nil
}

// askMembers asks the skillstream members answering on nc for their
// service info within wait, then each for its view of q.
func askMembers(ctx context.Context, nc *nats.Conn, wait time.Duration, q catalog.Query) ([]fleetMember, error) {
	subject, err := micro.ControlSubject(micro.InfoVerb, processor.ServiceName, "")
	if err != nil {
		return nil, err
	}
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("ask the members: %w", err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		return nil, fmt.Errorf("ask the members: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	byID := map[string]fleetMember{}
	for len(byID) < maxMembers {
		m, err := sub.NextMsgWithContext(wctx)
		if err != nil {
			break // the wait is over
		}
		var info micro.Info
		if len(m.Data) > 64<<10 || json.Unmarshal(m.Data, &info) != nil {
			continue
		}
		md := info.Metadata
		id := md["instance"]
		if !events.ValidInstance(id) {
			continue
		}
		byID[id] = fleetMember{Instance: id, Version: clip(info.Version), Build: clip(md["build"]), Protocol: clip(md["protocol"]),
			Stream: clip(md["stream"]), Consumer: clip(md["consumer"]), Prefix: clip(md["prefix"]), Owner: clip(md["owner"]), Store: clip(md["store"])}
	}
	out := make([]fleetMember, 0, len(byID))
	for _, m := range byID {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b fleetMember) int { return strings.Compare(a.Instance, b.Instance) })
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			vctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			rep, err := processor.AskView(vctx, nc, out[i].Instance, q)
			switch {
			case err != nil:
				out[i].ViewError = clip(err.Error())
			case rep.Error != "":
				out[i].ViewError = clip(rep.Error)
			default:
				out[i].Digest, out[i].Epoch, out[i].Revision, out[i].Complete = clip(rep.Digest), clip(rep.Epoch), rep.Revision, rep.Complete
			}
		})
	}
	wg.Wait()
	return out, nil
}

// clip bounds a member's text.
func clip(s string) string {
	if len(s) > maxMemberText {
		return s[:maxMemberText] + "…"
	}
	return s
}

// streamOf reads the sessions stream's limits and use, and its durable
// consumers' backlog.
func streamOf(ctx context.Context, js jetstream.JetStream, name string) (*streamUse, []consumerUse, string) {
	if name == "" {
		return nil, nil, "no sessions stream configured"
	}
	st, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil, fmt.Sprintf("stream %s does not exist yet (serve creates it)", name)
	}
	if err != nil {
		return nil, nil, fmt.Sprintf("stream %s: %v", name, err)
	}
	info := st.CachedInfo()
	c, state := info.Config, info.State
	u := &streamUse{Name: c.Name, Subjects: c.Subjects, Replicas: c.Replicas, Storage: c.Storage.String(), Retention: c.Retention.String(),
		Discard: discardText(c.Discard), Msgs: state.Msgs, Bytes: int64(state.Bytes), MaxBytes: c.MaxBytes, MaxMsgs: c.MaxMsgs, MaxMsgSize: int64(c.MaxMsgSize),
		MaxAge: c.MaxAge, First: state.FirstTime, Last: state.LastTime, Consumers: state.Consumers, NumSubjects: state.NumSubjects, Deleted: state.NumDeleted,
		BytesPercent: percent(state.Bytes, c.MaxBytes), MsgsPercent: percent(state.Msgs, c.MaxMsgs)}
	var cons []consumerUse
	lister := st.ListConsumers(ctx)
	for ci := range lister.Info() {
		if ci.Config.Durable == "" || len(cons) >= 32 {
			continue // readers' ephemeral consumers come and go
		}
		cons = append(cons, consumerUse{Name: ci.Name, Pending: ci.NumPending, AckPending: uint64(ci.NumAckPending),
			Redelivered: ci.NumRedelivered, Waiting: ci.NumWaiting, Delivered: ci.Delivered.Stream, Paused: ci.Paused})
	}
	slices.SortFunc(cons, func(a, b consumerUse) int { return strings.Compare(a.Name, b.Name) })
	return u, cons, ""
}

// partitionUse is one partition stream's use: its bytes and messages
// against their limits, and its durable consumers' backlog.
type partitionUse struct {
	Use *streamUse
	// Pending sums its durable consumers' records waiting to be read,
	// AckPending those delivered and not acknowledged.
	Pending, AckPending uint64
	Err                 string
}

// partitionsOf reads each partition stream's use.
func partitionsOf(ctx context.Context, js jetstream.JetStream, places []partition.Place) []partitionUse {
	out := make([]partitionUse, len(places))
	for i, p := range places {
		u, cons, err := streamOf(ctx, js, p.Stream)
		out[i] = partitionUse{Use: u, Err: err}
		for _, c := range cons {
			out[i].Pending += c.Pending
			out[i].AckPending += c.AckPending
		}
	}
	return out
}

// discardText says what a full stream drops.
func discardText(d jetstream.DiscardPolicy) string {
	if d == jetstream.DiscardNew {
		return "a full stream refuses new messages"
	}
	return "a full stream drops its oldest messages"
}

// accountOf reads the account's JetStream use and limits.
func accountOf(ctx context.Context, js jetstream.JetStream) (*accountUse, string) {
	ai, err := js.AccountInfo(ctx)
	if err != nil {
		return nil, fmt.Sprintf("account: %v", err)
	}
	l := ai.Limits
	return &accountUse{Store: int64(ai.Store), Memory: int64(ai.Memory), MaxStore: l.MaxStore, MaxMemory: l.MaxMemory,
		StorePercent: percent(ai.Store, l.MaxStore), Streams: ai.Streams, Consumers: ai.Consumers,
		MaxStreams: l.MaxStreams, MaxConsumers: l.MaxConsumers}, ""
}

// projectionOf reads how far the usage projection lags the stream: the
// projection's position and the outputs after it (the current hour's
// sums are the only bucket read).
func projectionOf(ctx context.Context, src Sources) (*usage.ProjectionInfo, string) {
	if src.UsageBucket == "" || src.Stream == "" {
		return nil, "no usage projection configured"
	}
	rep, err := projection.ReadPartitions(ctx, src.JS, projection.Options{Stream: src.Stream, Prefix: src.Fleet.Prefix, Layout: src.Layout, Bucket: src.UsageBucket}, len(src.Partitions), time.Now())
	if err != nil {
		return nil, err.Error()
	}
	return rep.Projection, ""
}

// percent is used of limit in percent; -1 without a limit.
func percent(used uint64, limit int64) float64 {
	if limit <= 0 {
		return -1
	}
	return 100 * float64(used) / float64(limit)
}
