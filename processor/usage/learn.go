package usage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// SearchLoadSteps is how many skill tool results of a session after a
// search may load a skill that the search taught: the skills loaded by
// the first SearchLoadSteps results (loads or errors) after it, before
// the session searches again.
const SearchLoadSteps = 3

// SearchLoad is a search followed by a load in the same session: what a
// search index learns from (the query's words describe the skill).
type SearchLoad struct {
	Session string
	Query   string
	Skill   string
	At      time.Time // when the load was written
}

// SearchLoads tells, from a session stream's outputs read in log order,
// the searches followed by loads: a search answered (whatever it found)
// and each distinct skill loaded by the session's next SearchLoadSteps
// skill tool results, unless the session searched again first (a search
// answered or failed) - the later search is then the one a load follows.
// It keeps one pending search per session, for at most MaxSearchSessions
// sessions at once (further sessions' searches are not followed until
// some end).
type SearchLoads struct {
	pending map[string]*pendingSearch
}

type pendingSearch struct {
	query  string
	steps  int
	loaded []string
}

// NewSearchLoads returns an empty SearchLoads.
func NewSearchLoads() *SearchLoads {
	return &SearchLoads{pending: make(map[string]*pendingSearch)}
}

// Add reads one output written at at and returns the pair it completes,
// if any.
func (s *SearchLoads) Add(out Output, at time.Time) (SearchLoad, bool) {
	switch out.Kind {
	case OutputSearch:
		q := strings.TrimSpace(out.Search.Query)
		if q == "" {
			delete(s.pending, out.Session)
			return SearchLoad{}, false
		}
		if _, ok := s.pending[out.Session]; !ok && len(s.pending) >= MaxSearchSessions {
			return SearchLoad{}, false
		}
		s.pending[out.Session] = &pendingSearch{query: q}
	case OutputSearchError:
		delete(s.pending, out.Session)
	case OutputLoad, OutputSkillError:
		p := s.pending[out.Session]
		if p == nil {
			return SearchLoad{}, false
		}
		if p.steps++; p.steps >= SearchLoadSteps {
			delete(s.pending, out.Session)
		}
		if out.Kind != OutputLoad || catalog.CheckName(out.Skill) != nil || slices.Contains(p.loaded, out.Skill) {
			return SearchLoad{}, false
		}
		p.loaded = append(p.loaded, out.Skill)
		return SearchLoad{Session: out.Session, Query: p.query, Skill: out.Skill, At: at}, true
	}
	return SearchLoad{}, false
}

// FollowOptions say which stream FollowSearchLoads follows, and from
// when.
type FollowOptions struct {
	Stream, Prefix string
	Layout         events.Layout
	// Since starts the reading: the outputs written from then on, then
	// every new one as it is written. Zero reads from the stream's first
	// record.
	Since time.Time
}

// FollowSearchLoads reads the tool results of a session stream from
// opts.Since, and then as they are written, and calls learn with each
// search followed by a load (SearchLoads' rule), in log order, until ctx
// ends (then it returns nil). It reads through an ordered consumer of the
// tool.result subjects alone (and one direct get of the trigger of each
// error result); it never writes.
func FollowSearchLoads(ctx context.Context, js jetstream.JetStream, opts FollowOptions, learn func(SearchLoad)) error {
	if opts.Prefix == "" {
		opts.Prefix = events.DefaultPrefix
	}
	if err := events.ValidatePrefix(opts.Prefix); err != nil {
		return err
	}
	st, err := js.Stream(ctx, opts.Stream)
	if err != nil {
		return fmt.Errorf("follow searches of stream %s: %w", opts.Stream, err)
	}
	sid := strings.Repeat("*.", opts.Layout.SessionTokens()-1) + "*"
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{events.Subject(opts.Prefix, sid, events.KindToolResult)},
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: ReaderInactive,
	}
	if !opts.Since.IsZero() {
		t := opts.Since
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	cons, err := st.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("follow searches of stream %s: %w", opts.Stream, err)
	}
	defer DeleteReader(ctx, st, cons)
	it, err := cons.Messages(jetstream.PullMaxMessages(readBatch))
	if err != nil {
		return fmt.Errorf("follow searches of stream %s: %w", opts.Stream, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	outs, pairs := NewOutputReader(), NewSearchLoads()
	for {
		msg, err := it.Next()
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("follow searches of stream %s: %w", opts.Stream, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			continue
		}
		out := outs.Read(ctx, st.GetMsg, opts.Layout, opts.Prefix, msg.Subject(), msg.Headers().Get(events.HeaderContentType), msg.Data())
		if p, ok := pairs.Add(out, md.Timestamp.UTC()); ok {
			learn(p)
		}
	}
}
