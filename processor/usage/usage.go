// Package usage reads a session stream's outputs over a window of time and
// reports how skills were used: loads by the model, invocations by users,
// errors by code, sessions, digests and revisions seen, what the catalogs
// sent cost, and how the model searched for skills (skill_search).
//
// It reads only the kinds a processor (or a worker, for invocations)
// writes as outputs - catalog.append, tool.result and skill.invocation -
// through an ordered consumer filtered to those subjects and started at the
// window's start time, so the cost of a read grows with the outputs inside
// the window, not with the stream's history. The triggers are not read,
// except one direct get of the trigger behind each error result (an error
// carries neither the skill name nor the tool of its call: a skill call's
// names its skill, a skill search's makes it a search's) and, with a
// project filter, the triggers of the window (a project is named by
// triggers only).
//
// # Releases
//
// A store skill's load names the revision of the skill's own history it
// loaded and the channel that chose it (stable, canary, pin): in its
// value, and in the Usage-Summary header, which leaves stable out
// (ReleaseChannel reads both alike); an error result names the revision
// its call's name resolved to. Each row splits its loads and errors by
// revision and channel (SkillUsage.Releases), and Read its skills found
// then loaded by the revision loaded, so that a release's candidate is
// compared with its stable side by side.
//
// ReadOutput reads one output record the way Read counts it; package
// projection keeps the same sums per hour, current as outputs are
// appended, so that a report over a window need not read the stream.
//
// # Searches
//
// A tool.result whose value is a search's (events.ToolResult.Search) is a
// search answered; an error result whose trigger is a
// tool.call.skill_search is a search that failed. Per session the report
// counts the searches, those that matched nothing (their queries are
// listed), and the skills found then loaded: a skill a search of the
// session returned that a later successful skill tool result of the same
// session loaded, counted once per session and skill. Records are read in
// stream order, so "later" is the log's order.
//
// FollowSearchLoads reads the same tool results, from an instant on and
// then as they are written, for what a search index learns from: each
// search followed, within the session's next SearchLoadSteps skill tool
// results and before it searches again, by a load (SearchLoads).
package usage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// KindInvocation is the kind of a user's explicit invocation of a skill
// (a slash command, say), written by a worker. Only its payload's "name"
// field is read.
const KindInvocation events.Kind = "skill.invocation"

// MaxSkills bounds how many distinct skill names a report tracks; names
// beyond it (a flood of invalid names, say) are counted under OtherSkill.
const MaxSkills = 10000

// OtherSkill names the row that collects skills beyond MaxSkills.
const OtherSkill = "_other"

// InvalidSkill names the row of records naming something that is not a
// skill name (a worker's garbage gets no row of its own, and no memory).
const InvalidSkill = "_invalid"

// UnknownSkill names the row of error results whose name did not resolve
// to a skill (unknown, or a call refused before it was looked up) or
// whose skill call could not be read any more (removed by the stream's
// limits): only skills that exist get a row of their own, so made-up
// names cannot take the rows of real ones.
const UnknownSkill = "_unknown"

// resolvedCodes are the error codes of a skill call counted in the row of
// the name it called: the skill exists (not_model_invocable), or its
// provider failed on it (provider: a worker cannot choose to cause one).
var resolvedCodes = map[string]bool{events.CodeNotModelInvocable: true, events.CodeProvider: true}

// MaxSearchSessions bounds the sessions whose searches are told apart (a
// row each, and the skills their searches found); the searches of further
// sessions count in the totals only.
const MaxSearchSessions = 100000

// MaxFoundPairs bounds the (session, skill) pairs remembered to tell a
// skill found then loaded; past it, a skill found in a further pair is not
// followed.
const MaxFoundPairs = 1 << 18

// MaxQueries bounds the distinct queries listed as having matched
// nothing; further ones are counted in SearchUsage.NoMatchOther.
const MaxQueries = 1000

// SessionRows is how many sessions SearchUsage.BySession lists: those
// that searched most.
const SessionRows = 100

// TokenBytes is the number of bytes of catalog text counted as one token
// in the estimate: a rough average for English prose and markdown.
const TokenBytes = 4

// ErrNotSessionStream reports a stream that does not hold skillstream
// session subjects under the prefix.
var ErrNotSessionStream = errors.New("not a skillstream session stream")

// Options select what to read.
type Options struct {
	Stream, Prefix string
	// Layout is the stream's session layout: in the owner layout session
	// ids (Session, and those the report names) are "<owner>.<sid>".
	Layout events.Layout
	// Since starts the window; zero reads from the stream's first record.
	Since time.Time
	// Session, when set, reads that session only.
	Session string
	// Project, when set, counts only the outputs of sessions whose latest
	// trigger in the window named this project.
	Project string
	// Progress, when set, is called after each record with the number
	// read and the number still to read.
	Progress func(read int, remaining uint64)
	// Partitions, when 2 or more, reads the window from each of that many
	// partitions of Stream and Prefix (events.PartitionStream and
	// events.PartitionPrefix) into one report: each session is kept in
	// one partition, so what is counted per session stays exact. With a
	// Session, give that session's own stream and prefix instead.
	Partitions int
}

// Report is the result of a read. Its JSON keys are stable.
type Report struct {
	Stream string `json:"stream"`
	Prefix string `json:"prefix"`
	// Partitions, when 2 or more, says that the report sums that many
	// partitions of Stream and Prefix.
	Partitions int       `json:"partitions,omitempty"`
	Since      time.Time `json:"since,omitzero"`
	Session    string    `json:"session,omitempty"`
	Project    string    `json:"project,omitempty"`
	// Records is how many records were read; Unreadable how many of them
	// could not be read as what their subject says (written by something
	// else), and are counted nowhere else.
	Records    int          `json:"records"`
	Unreadable int          `json:"unreadable"`
	Skills     []SkillUsage `json:"skills"`
	Catalogs   CatalogUsage `json:"catalogs"`
	// ListedNeverUsed names the skills listed by a catalog in the window
	// that were neither loaded nor invoked in it, sorted.
	ListedNeverUsed []string `json:"listedNeverUsed"`
	// Searches sums the skill searches answered in the window.
	Searches SearchUsage `json:"searches"`
	// Projection, present only in a report read from the usage
	// projection (package projection) rather than from the stream, says
	// what the projection covered and what it could not give.
	Projection *ProjectionInfo `json:"projection,omitempty"`
	// Partial names what is incomplete in the report: skills folded into
	// OtherSkill past a bound, and, read from the projection, the same
	// list as Projection.Partial.
	Partial []string `json:"partial"`
}

// ProjectionInfo describes a report summed from the hour buckets of the
// usage projection.
type ProjectionInfo struct {
	// Bucket is the key-value bucket read.
	Bucket string `json:"bucket"`
	// Since is the window's start as asked (Report.Since is the start of
	// its hour: the projection counts by the hour, UTC); zero for the
	// whole projection.
	Since time.Time `json:"requestedSince,omitzero"`
	// Hours is how many hour buckets the window spans, Read how many of
	// them held records.
	Hours int `json:"hours"`
	Read  int `json:"hoursRead"`
	// CountsFrom is where the projection starts: records before it (a
	// projection rebuilt with --since) are in no bucket.
	CountsFrom time.Time `json:"countsFrom,omitzero"`
	// AppliedSeq is the stream sequence up to which every output record
	// is counted, AppliedAt that record's time.
	AppliedSeq uint64    `json:"appliedSeq"`
	AppliedAt  time.Time `json:"appliedAt,omitzero"`
	// LagRecords counts the output records of the stream after
	// AppliedSeq, LagSeconds the time from AppliedAt to the newest of
	// them. LagCounted says that they were read from the stream and are
	// counted (there were few enough); otherwise they are not.
	LagRecords uint64  `json:"lagRecords"`
	LagSeconds float64 `json:"lagSeconds"`
	LagCounted bool    `json:"lagCounted"`
	// NotKept names the report's fields the projection does not keep
	// (they hold zero, or are empty).
	NotKept []string `json:"notKept"`
	// Partial names what is incomplete in this window: hour buckets that
	// could not be read or were too large to keep whole, sets cut at
	// their bound.
	Partial []string `json:"partial"`
}

// SearchUsage sums the skill searches (skill_search calls) answered in
// the window.
type SearchUsage struct {
	// Searches counts search results, errors included; Found those that
	// matched at least one skill (a page past the last match included),
	// NoMatch those that matched none, Errors the failed ones by error
	// code.
	Searches int            `json:"searches"`
	Found    int            `json:"found"`
	NoMatch  int            `json:"noMatch"`
	Errors   map[string]int `json:"errors"`
	// Sessions is how many sessions searched, PerSession their mean
	// number of searches.
	Sessions   int     `json:"sessions"`
	PerSession float64 `json:"perSession"`
	// SessionsEstimated says that Sessions, and so PerSession, are
	// estimates (a report of the usage projection, past its exact range).
	SessionsEstimated bool `json:"sessionsEstimated,omitempty"`
	// FoundThenLoaded counts the skills a search of a session returned
	// that the session's skill tool loaded afterwards, once per session
	// and skill.
	FoundThenLoaded int `json:"foundThenLoaded"`
	// BySession lists the SessionRows sessions that searched most, most
	// searches first, ties by session id.
	BySession []SessionSearches `json:"bySession"`
	// Skills lists every skill a search returned, most often returned
	// first, ties by name.
	Skills []FoundSkill `json:"skills"`
	// NoMatchQueries are the queries that matched nothing, most frequent
	// first, ties by query; NoMatchOther counts the searches of queries
	// beyond MaxQueries distinct ones.
	NoMatchQueries []QueryCount `json:"noMatchQueries"`
	NoMatchOther   int          `json:"noMatchOther"`
}

// SessionSearches is one session's searches.
type SessionSearches struct {
	Session  string `json:"session"`
	Searches int    `json:"searches"`
	NoMatch  int    `json:"noMatch"`
	// FoundThenLoaded: skills its searches returned that it loaded
	// afterwards.
	FoundThenLoaded int `json:"foundThenLoaded"`
}

// FoundSkill is one skill searches returned.
type FoundSkill struct {
	Name string `json:"name"`
	// Found counts the search results that listed it; Sessions the
	// sessions whose searches did; LoadedAfter those of them that loaded
	// it afterwards.
	Found       int `json:"found"`
	Sessions    int `json:"sessions"`
	LoadedAfter int `json:"loadedAfter"`
}

// QueryCount is a query and how many searches asked it.
type QueryCount struct {
	Query string `json:"query"`
	Count int    `json:"count"`
}

// SkillUsage is one skill's row.
type SkillUsage struct {
	Name string `json:"name"`
	// Loads counts successful skill tool results (the model loaded it).
	Loads int `json:"loads"`
	// Invocations counts skill.invocation records (a user invoked it).
	Invocations int `json:"invocations"`
	// Errors counts error results by error code.
	Errors   map[string]int `json:"errors"`
	Sessions int            `json:"sessions"`
	// SessionsEstimated says that Sessions is an estimate (a report of
	// the usage projection, past its exact range).
	SessionsEstimated bool `json:"sessionsEstimated,omitempty"`
	// First and Last are the times of its first and last record.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Digests and Revisions are the content digests and store revisions
	// its loads carried, sorted.
	Digests   []string `json:"digests"`
	Revisions []uint64 `json:"revisions"`
	// Releases split the row's loads and errors by the revision of the
	// skill's own history and the channel that served it (stable, canary,
	// pin), so that a release's candidate is compared with its stable;
	// ordered by revision, then channel. Only store skills' records name
	// a revision: absent for the others, and for records older than
	// releases.
	Releases []ReleaseUsage `json:"releases,omitempty"`
}

// ReleaseUsage is one revision of a skill, as served through one channel:
// its loads, its errors (of calls whose name resolved to it) and, read
// from the stream, the loads that followed a search of the same session
// that returned the skill.
type ReleaseUsage struct {
	Rev             uint64 `json:"rev"`
	Channel         string `json:"channel"`
	Loads           int    `json:"loads"`
	Errors          int    `json:"errors"`
	FoundThenLoaded int    `json:"foundThenLoaded"`
}

// ReleaseKey names a ReleaseUsage: a revision and its channel.
type ReleaseKey struct {
	Rev     uint64
	Channel string
}

// ReleaseChannel is the channel a record names, as reports count it: a
// revision named without a channel (a load's Usage-Summary leaves stable
// out) is stable.
func ReleaseChannel(rev uint64, channel string) string {
	if channel == "" && rev != 0 {
		return catalog.ChannelStable
	}
	return channel
}

// SortReleases orders a row's releases by revision, then channel.
func SortReleases(rs []ReleaseUsage) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Rev != rs[j].Rev {
			return rs[i].Rev < rs[j].Rev
		}
		return rs[i].Channel < rs[j].Channel
	})
}

// ErrorCount is the sum of a row's errors.
func (s SkillUsage) ErrorCount() int {
	n := 0
	for _, v := range s.Errors {
		n += v
	}
	return n
}

// CatalogUsage sums the catalogs appended in the window.
type CatalogUsage struct {
	// Appends counts catalogs by kind: initial, replacement, tombstone (a
	// replacement without entries), and changes (a change list, which
	// names only the skills added, changed or removed) when there are any.
	Appends map[string]int `json:"appends"`
	// BytesByKind is TextBytes by the same kinds: what the full lists cost
	// beside what the change lists cost.
	BytesByKind map[string]int64 `json:"bytesByKind"`
	// TextBytes is the bytes of catalog text sent to models;
	// EstimatedTokens is TextBytes / TokenBytes, rounded up.
	TextBytes       int64 `json:"textBytes"`
	EstimatedTokens int64 `json:"estimatedTokens"`
	// Listed is how many distinct skills the catalogs listed.
	Listed int `json:"listed"`
}

type skillAcc struct {
	row      SkillUsage
	sessions map[string]struct{}
	digests  map[string]struct{}
	revs     map[uint64]struct{}
	releases map[ReleaseKey]*ReleaseUsage
}

// release is the accumulator of one revision and channel of the skill;
// nil when the record names none.
func (a *skillAcc) release(rev uint64, channel string) *ReleaseUsage {
	if rev == 0 && channel == "" {
		return nil
	}
	k := ReleaseKey{Rev: rev, Channel: channel}
	if ru, ok := a.releases[k]; ok {
		return ru
	}
	if len(a.releases) >= MaxReleases {
		return nil
	}
	if a.releases == nil {
		a.releases = map[ReleaseKey]*ReleaseUsage{}
	}
	ru := &ReleaseUsage{Rev: rev, Channel: channel}
	a.releases[k] = ru
	return ru
}

// MaxReleases bounds the revisions and channels a report keeps per
// skill; records past it are counted in the row only.
const MaxReleases = 64

type reader struct {
	folded bool // skills counted under OtherSkill past MaxSkills
	opts   Options
	st     jetstream.Stream
	// stream and prefix are st's: the partition being read.
	stream, prefix string
	skills         map[string]*skillAcc
	listed         map[string]struct{}
	project        map[string]string // session -> project of its latest trigger
	rep            Report
	search         searchAcc
	outputs        *OutputReader
}

// searchAcc accumulates the searches.
type searchAcc struct {
	sessions map[string]*sessionAcc
	found    map[string]*FoundSkill
	noMatch  map[string]int
	pairs    int // (session, skill) pairs in sessionAcc.found
}

type sessionAcc struct {
	row SessionSearches
	// found: the skills its searches returned, true once loaded after.
	found map[string]bool
}

// Read reads the window and returns its report.
func Read(ctx context.Context, js jetstream.JetStream, opts Options) (*Report, error) {
	if opts.Prefix == "" {
		opts.Prefix = events.DefaultPrefix
	}
	if err := events.ValidatePrefix(opts.Prefix); err != nil {
		return nil, err
	}
	if opts.Session != "" {
		if err := events.CheckSessionIn(opts.Layout, opts.Session); err != nil {
			return nil, err
		}
	}
	if opts.Partitions >= 2 && opts.Session != "" {
		return nil, errors.New("read a session from its own partition's stream, not from every partition")
	}
	places := []place{{opts.Stream, opts.Prefix}}
	if opts.Partitions >= 2 {
		places = places[:0]
		for k := range opts.Partitions {
			places = append(places, place{events.PartitionStream(opts.Stream, k), events.PartitionPrefix(opts.Prefix, k)})
		}
	}
	// Every stream first: a report refuses a missing one before reading.
	sts := make([]jetstream.Stream, len(places))
	for i, p := range places {
		st, err := sessionStream(ctx, js, p.stream, p.prefix)
		if err != nil {
			return nil, err
		}
		sts[i] = st
	}
	sid := strings.Repeat("*.", opts.Layout.SessionTokens()-1) + "*" // every session: one wildcard per session token
	if opts.Session != "" {
		sid = opts.Session
	}
	filters := func(prefix string) []string {
		fs := []string{
			events.Subject(prefix, sid, events.KindCatalog),
			events.Subject(prefix, sid, events.KindToolResult),
			events.Subject(prefix, sid, KindInvocation),
		}
		if opts.Project != "" {
			fs = append(fs,
				events.Subject(prefix, sid, events.KindPreStep),
				events.Subject(prefix, sid, events.KindSkillCall),
				events.Subject(prefix, sid, events.KindSkillSearch))
		}
		return fs
	}
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if !opts.Since.IsZero() {
		t := opts.Since
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		cfg.OptStartTime = &t
	}
	r := &reader{
		outputs: NewOutputReader(),
		opts:    opts,
		skills:  map[string]*skillAcc{},
		listed:  map[string]struct{}{},
		project: map[string]string{},
		rep: Report{Stream: opts.Stream, Prefix: opts.Prefix, Partitions: max(opts.Partitions, 0), Since: opts.Since, Session: opts.Session, Project: opts.Project,
			Catalogs: CatalogUsage{Appends: map[string]int{"initial": 0, "replacement": 0, "tombstone": 0},
				BytesByKind: map[string]int64{"initial": 0, "replacement": 0, "tombstone": 0}}},
		search: searchAcc{sessions: map[string]*sessionAcc{}, found: map[string]*FoundSkill{}, noMatch: map[string]int{}},
	}
	if opts.Partitions < 2 {
		r.rep.Partitions = 0
	}
	for i, p := range places {
		r.st, r.stream, r.prefix = sts[i], p.stream, p.prefix
		c := cfg
		c.FilterSubjects = filters(p.prefix)
		if err := r.read(ctx, sts[i], c); err != nil {
			return nil, err
		}
	}
	return r.finish(), nil
}

// place is a stream read and its sessions' subject prefix.
type place struct{ stream, prefix string }

// sessionStream is stream, checked to hold the session subjects under
// prefix.
func sessionStream(ctx context.Context, js jetstream.JetStream, stream, prefix string) (jetstream.Stream, error) {
	st, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("stream %s does not exist", stream)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", stream, err)
	}
	want := events.StreamSubjects(prefix)
	if !slices.Contains(st.CachedInfo().Config.Subjects, want) {
		return nil, fmt.Errorf("stream %s holds subjects %q, not %s: %w", stream, st.CachedInfo().Config.Subjects, want, ErrNotSessionStream)
	}
	return st, nil
}

const readBatch = 512

// ReaderInactive is how long the server keeps a reader's consumer that
// nobody pulls from: a report that ends without removing its own (killed,
// say) leaves it that long at most, not the client's default of minutes
// (a server holds a bounded number of consumers per stream: 1,000 by
// default).
const ReaderInactive = 30 * time.Second

// DeleteReader removes a report's ordered consumer when the report is
// done, so that reports run often (a dashboard, say) leave no consumers
// behind.
func DeleteReader(ctx context.Context, st jetstream.Stream, cons jetstream.Consumer) {
	ci := cons.CachedInfo()
	if ci == nil || ci.Name == "" {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = st.DeleteConsumer(dctx, ci.Name)
}

func (r *reader) read(ctx context.Context, st jetstream.Stream, cfg jetstream.OrderedConsumerConfig) error {
	cfg.InactiveThreshold = ReaderInactive
	cons, err := st.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("read stream %s: %w", r.stream, err)
	}
	defer DeleteReader(ctx, st, cons)
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("read stream %s: %w", r.stream, err)
	}
	if info.NumPending == 0 {
		return nil
	}
	// Messages, not Fetch: an ordered consumer recreates its server-side
	// consumer at every Fetch, which costs a round trip or more each batch.
	it, err := cons.Messages(jetstream.PullMaxMessages(readBatch))
	if err != nil {
		return fmt.Errorf("read stream %s: %w", r.stream, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// A stall longer than this (the server gone) ends the read.
		msg, err := it.Next(jetstream.NextMaxWait(30 * time.Second))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("read stream %s: %w", r.stream, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("read stream %s: %w", r.stream, err)
		}
		r.record(ctx, msg, md)
		if r.opts.Progress != nil {
			r.opts.Progress(r.rep.Records, md.NumPending)
		}
		if md.NumPending == 0 {
			return nil
		}
	}
}

// record counts one record.
func (r *reader) record(ctx context.Context, msg jetstream.Msg, md *jetstream.MsgMetadata) {
	sid, kind, err := events.ParseSubjectIn(r.opts.Layout, r.prefix, msg.Subject())
	if err != nil {
		r.rep.Records++
		r.rep.Unreadable++
		return
	}
	enc, err := events.EncodingOf(msg.Headers().Get(events.HeaderContentType))
	if kind == events.KindPreStep || kind == events.KindSkillCall || kind == events.KindSkillSearch {
		// Read for the project filter only; not a record of the report.
		if err != nil {
			return
		}
		if p, err := events.PeekString(enc, msg.Data(), "project"); err == nil {
			r.project[sid] = p
		} else {
			r.project[sid] = ""
		}
		return
	}
	r.rep.Records++
	if err != nil {
		r.rep.Unreadable++
		return
	}
	if r.opts.Project != "" && r.project[sid] != r.opts.Project {
		return
	}
	out := r.outputs.read(ctx, r.st.GetMsg, r.opts.Layout, r.prefix, sid, kind, enc, msg.Data())
	r.count(out, md.Timestamp.UTC())
}

// count adds one output record read at time at to the report.
func (r *reader) count(out Output, at time.Time) {
	switch out.Kind {
	case OutputCatalog:
		r.rep.Catalogs.Appends[out.Update]++
		r.rep.Catalogs.TextBytes += out.TextBytes
		r.rep.Catalogs.BytesByKind[out.Update] += out.TextBytes
		for _, name := range out.Listed {
			if len(r.listed) < MaxSkills {
				r.listed[name] = struct{}{}
			}
		}
	case OutputSearch:
		r.searched(out.Session, out.Search)
	case OutputLoad:
		a := r.skill(out.Skill)
		a.row.Loads++
		if out.Digest != "" {
			a.digests[out.Digest] = struct{}{}
		}
		if out.Revision != 0 {
			a.revs[out.Revision] = struct{}{}
		}
		ru := a.release(out.Rev, out.Channel)
		if ru != nil {
			ru.Loads++
		}
		a.seen(out.Session, at)
		if r.loaded(out.Session, out.Skill) && ru != nil {
			ru.FoundThenLoaded++
		}
	case OutputSearchError:
		r.searchFailed(out.Session, out.Code)
	case OutputSkillError:
		a := r.skill(out.Skill)
		a.row.Errors[out.Code]++
		if ru := a.release(out.Rev, out.Channel); ru != nil {
			ru.Errors++
		}
		a.seen(out.Session, at)
	case OutputInvocation:
		a := r.skill(out.Skill)
		a.row.Invocations++
		a.seen(out.Session, at)
	default:
		r.rep.Unreadable++
	}
}

// OutputKind is what one output record counts as in a report.
type OutputKind uint8

// The kinds of output records.
const (
	// OutputUnreadable is a record that is not what its subject says
	// (written by something else): counted as unreadable, nowhere else.
	OutputUnreadable OutputKind = iota
	// OutputCatalog is a catalog appended.
	OutputCatalog
	// OutputLoad is a successful skill tool result: the model loaded a
	// skill.
	OutputLoad
	// OutputSkillError is a skill call answered with an error.
	OutputSkillError
	// OutputSearch is a skill search answered.
	OutputSearch
	// OutputSearchError is a skill search answered with an error.
	OutputSearchError
	// OutputInvocation is a user's invocation of a skill.
	OutputInvocation
)

// Output is what one output record tells a report. A reader that keeps
// its own sums (the usage projection) reads records with ReadOutput and
// so counts them exactly as Read does.
type Output struct {
	Kind OutputKind
	// Session is the session of the record's subject.
	Session string
	// Skill names the skill of a load, skill error or invocation as the
	// record (or, for an error, its trigger) names it; RowName gives the
	// row it is counted in. UnknownSkill for an error whose name did not
	// resolve to a skill, or whose trigger cannot be read any more.
	Skill string
	// Digest and Revision are what a load carried; Rev and Channel the
	// revision of the skill's own history a load or a skill error was of,
	// and its channel (ReleaseChannel: stable when a revision is named
	// without one); zero when the record names none.
	Digest   string
	Revision uint64
	Rev      uint64
	Channel  string
	// Code is the error code of an error result ("unknown_error" when it
	// has none).
	Code string
	// Search is the value of an answered search.
	Search *events.SearchValue
	// Update is a catalog's kind: initial, replacement, tombstone (a
	// replacement without entries) or changes; TextBytes the bytes of its
	// text.
	Update    string
	TextBytes int64
	// Listed are the skill names a catalog lists (its entries, and what a
	// change list adds or changes), only the valid ones. An OutputReader
	// shares them between the records of one catalog body: read only.
	Listed []string
	// ListedKey, when set, names Listed: two outputs with the same key
	// list the same names (an OutputReader's catalogs).
	ListedKey string
}

// MsgGetter reads the stream's message at seq: the trigger of an error
// result (jetstream.Stream.GetMsg, for one).
type MsgGetter func(ctx context.Context, seq uint64, opts ...jetstream.GetMsgOpt) (*jetstream.RawStreamMsg, error)

// ReadOutput reads one record of an output subject (catalog.append,
// tool.result or skill.invocation) of layout l under prefix, as Read
// counts it. The skill of an error result is read from its trigger with
// get (one read per error). Anything else, and a record that is not what
// its subject says, is OutputUnreadable.
func ReadOutput(ctx context.Context, get MsgGetter, l events.Layout, prefix, subject, contentType string, data []byte) Output {
	var none *OutputReader // remembers nothing: every record decoded
	return none.Read(ctx, get, l, prefix, subject, contentType, data)
}

func readOutput(ctx context.Context, get MsgGetter, l events.Layout, prefix, sid string, kind events.Kind, enc events.Encoding, data []byte) Output {
	out := Output{Session: sid}
	switch kind {
	case events.KindCatalog:
		c, err := events.DecodeCatalogIn(l, enc, data)
		if err != nil || c.Session != sid {
			return out
		}
		out.Kind = OutputCatalog
		out.Update = events.ReportedUpdate(c.Source)
		out.TextBytes = int64(len(c.Text))
		for _, e := range c.Source.Entries {
			if catalog.CheckName(e.Name) == nil {
				out.Listed = append(out.Listed, e.Name)
			}
		}
		for _, ch := range c.Source.Changes { // a change list lists what it adds or changes
			if ch.Change != events.ChangeRemoved && catalog.CheckName(ch.Name) == nil {
				out.Listed = append(out.Listed, ch.Name)
			}
		}
	case events.KindToolResult:
		res, err := events.DecodeToolResultIn(l, enc, data)
		if err != nil || (res.Session != sid && res.Session != "") { // a bad_request result may lack its session
			return out
		}
		if !res.IsError && res.Search != nil {
			out.Kind, out.Search = OutputSearch, res.Search
			return out
		}
		if !res.IsError && res.Value != nil {
			out.Kind, out.Skill = OutputLoad, res.Value.Name
			out.Digest, out.Revision = res.Value.Digest, res.Value.Revision
			out.Rev, out.Channel = res.Value.Rev, ReleaseChannel(res.Value.Rev, res.Value.Channel)
			return out
		}
		out.Code = "unknown_error"
		if res.Error != nil && res.Error.Code != "" {
			out.Code = res.Error.Code
		}
		if res.Error != nil {
			out.Rev, out.Channel = res.Error.Rev, ReleaseChannel(res.Error.Rev, res.Error.Channel)
		}
		name, search := trigger(ctx, get, l, prefix, sid, res.TriggerSeq)
		if search {
			out.Kind = OutputSearchError
			return out
		}
		if !resolvedCodes[out.Code] && catalog.CheckName(name) == nil {
			name = UnknownSkill // a name of no skill: not a row of its own
		}
		out.Kind, out.Skill = OutputSkillError, name
	case KindInvocation:
		name, err := events.PeekString(enc, data, "name")
		if err != nil {
			return out
		}
		out.Kind, out.Skill = OutputInvocation, name
	}
	return out
}

// trigger reads the trigger at seq of an error result: a skill search's
// (search true), else the skill name of a skill call.
func trigger(ctx context.Context, get MsgGetter, l events.Layout, prefix, sid string, seq uint64) (name string, search bool) {
	if seq == 0 || get == nil {
		return UnknownSkill, false
	}
	m, err := get(ctx, seq)
	if err != nil {
		return UnknownSkill, false
	}
	if m.Subject == events.Subject(prefix, sid, events.KindSkillSearch) {
		return "", true
	}
	if m.Subject != events.Subject(prefix, sid, events.KindSkillCall) {
		return UnknownSkill, false
	}
	return callName(l, m), false
}

// callName reads the skill name of a skill call.
func callName(l events.Layout, m *jetstream.RawStreamMsg) string {
	enc, err := events.EncodingOf(m.Header.Get(events.HeaderContentType))
	if err != nil {
		return UnknownSkill
	}
	call, err := events.DecodeSkillCallIn(l, enc, m.Data)
	if err != nil {
		// A call with an unusable name is still answered; say what it named.
		return UnknownSkill
	}
	return call.Args.Name
}

// searchSession returns the accumulator of sid's searches, nil past
// MaxSearchSessions.
func (r *reader) searchSession(sid string) *sessionAcc {
	if a, ok := r.search.sessions[sid]; ok {
		return a
	}
	if len(r.search.sessions) >= MaxSearchSessions {
		return nil
	}
	a := &sessionAcc{row: SessionSearches{Session: sid}}
	r.search.sessions[sid] = a
	return a
}

// searched counts a search answered with v.
func (r *reader) searched(sid string, v *events.SearchValue) {
	su := &r.rep.Searches
	su.Searches++
	sa := r.searchSession(sid)
	if sa != nil {
		sa.row.Searches++
	}
	if v.Total <= 0 && len(v.Results) == 0 {
		su.NoMatch++
		if sa != nil {
			sa.row.NoMatch++
		}
		if _, ok := r.search.noMatch[v.Query]; ok || len(r.search.noMatch) < MaxQueries {
			r.search.noMatch[v.Query]++
		} else {
			su.NoMatchOther++
		}
		return
	}
	su.Found++
	for _, e := range v.Results {
		name := e.Name
		if catalog.CheckName(name) != nil {
			name = InvalidSkill
		}
		fs := r.search.found[name]
		if fs == nil {
			if len(r.search.found) >= MaxSkills {
				name = OtherSkill
				r.folded = true
				fs = r.search.found[name]
			}
			if fs == nil {
				fs = &FoundSkill{Name: name}
				r.search.found[name] = fs
			}
		}
		fs.Found++
		if sa == nil || name == InvalidSkill || name == OtherSkill {
			continue
		}
		if _, ok := sa.found[name]; ok {
			continue
		}
		if r.search.pairs >= MaxFoundPairs {
			continue
		}
		if sa.found == nil {
			sa.found = map[string]bool{}
		}
		sa.found[name] = false
		r.search.pairs++
		fs.Sessions++
	}
}

// searchFailed counts a search answered with an error of code.
func (r *reader) searchFailed(sid, code string) {
	su := &r.rep.Searches
	su.Searches++
	if su.Errors == nil {
		su.Errors = map[string]int{}
	}
	su.Errors[code]++
	if sa := r.searchSession(sid); sa != nil {
		sa.row.Searches++
	}
}

// loaded notes that sid's skill tool loaded name: a skill found then
// loaded when a search of sid returned it before (reported true).
func (r *reader) loaded(sid, name string) bool {
	sa := r.search.sessions[sid]
	if sa == nil {
		return false
	}
	if after, ok := sa.found[name]; !ok || after {
		return false
	}
	sa.found[name] = true
	sa.row.FoundThenLoaded++
	r.rep.Searches.FoundThenLoaded++
	r.search.found[name].LoadedAfter++
	return true
}

// RowName is the row a skill name is counted in: the name itself, or
// InvalidSkill for anything that is not a skill name (UnknownSkill stays
// itself).
func RowName(name string) string {
	if name != UnknownSkill && catalog.CheckName(name) != nil {
		return InvalidSkill
	}
	return name
}

func (r *reader) skill(name string) *skillAcc {
	name = RowName(name)
	if a, ok := r.skills[name]; ok {
		return a
	}
	if len(r.skills) >= MaxSkills {
		name = OtherSkill
		r.folded = true
		if a, ok := r.skills[name]; ok {
			return a
		}
	}
	a := &skillAcc{
		row:      SkillUsage{Name: name, Errors: map[string]int{}},
		sessions: map[string]struct{}{},
		digests:  map[string]struct{}{},
		revs:     map[uint64]struct{}{},
	}
	r.skills[name] = a
	return a
}

func (a *skillAcc) seen(sid string, at time.Time) {
	a.sessions[sid] = struct{}{}
	if a.row.First.IsZero() || at.Before(a.row.First) {
		a.row.First = at
	}
	if at.After(a.row.Last) {
		a.row.Last = at
	}
}

// SortedKeys are the keys of m in order; empty, not nil, when m is (the
// report's JSON shows an empty list).
func SortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// SortByUse orders a report's skill rows most used first (loads and
// invocations), ties by name.
func SortByUse(rows []SkillUsage) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if ua, ub := a.Loads+a.Invocations, b.Loads+b.Invocations; ua != ub {
			return ua > ub
		}
		return a.Name < b.Name
	})
}

// NeverUsed are the names of listed that used says were neither loaded
// nor invoked, in order: the pruning list.
func NeverUsed[V any](listed map[string]V, used func(name string) bool) []string {
	out := []string{}
	for name := range listed {
		if !used(name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func (r *reader) finish() *Report {
	rep := r.rep
	rep.Skills = []SkillUsage{}
	for _, a := range r.skills {
		row := a.row
		row.Sessions = len(a.sessions)
		row.Digests, row.Revisions = SortedKeys(a.digests), SortedKeys(a.revs)
		row.Releases = Releases(a.releases)
		rep.Skills = append(rep.Skills, row)
	}
	SortByUse(rep.Skills)
	rep.ListedNeverUsed = NeverUsed(r.listed, func(name string) bool {
		a, ok := r.skills[name]
		return ok && a.row.Loads+a.row.Invocations > 0
	})
	rep.Catalogs.Listed = len(r.listed)
	rep.Catalogs.EstimatedTokens = (rep.Catalogs.TextBytes + TokenBytes - 1) / TokenBytes
	rep.Searches = r.searchReport()
	rep.Partial = []string{}
	if r.folded {
		rep.Partial = append(rep.Partial, FoldedSkills(MaxSkills))
	}
	return &rep
}

// Releases are the release rows of m, sorted (SortReleases); nil for none.
func Releases(m map[ReleaseKey]*ReleaseUsage) []ReleaseUsage {
	if len(m) == 0 {
		return nil
	}
	out := make([]ReleaseUsage, 0, len(m))
	for _, ru := range m {
		out = append(out, *ru)
	}
	SortReleases(out)
	return out
}

// FoldedSkills is the partial entry of a report whose skills outnumbered
// its bound: those past it are counted under OtherSkill, not by name.
func FoldedSkills(bound int) string {
	return fmt.Sprintf("skills: more than %d distinct skills; the rest are counted under %s", bound, OtherSkill)
}

// searchReport finishes the searches' part of the report.
func (r *reader) searchReport() SearchUsage {
	su := r.rep.Searches
	if su.Errors == nil {
		su.Errors = map[string]int{}
	}
	su.Sessions = len(r.search.sessions)
	if su.Sessions > 0 {
		n := 0
		for _, a := range r.search.sessions {
			n += a.row.Searches
		}
		su.PerSession = float64(n) / float64(su.Sessions)
	}
	su.BySession = []SessionSearches{}
	for _, a := range r.search.sessions {
		su.BySession = append(su.BySession, a.row)
	}
	sort.Slice(su.BySession, func(i, j int) bool {
		a, b := su.BySession[i], su.BySession[j]
		if a.Searches != b.Searches {
			return a.Searches > b.Searches
		}
		return a.Session < b.Session
	})
	su.BySession = su.BySession[:min(len(su.BySession), SessionRows)]
	su.Skills = []FoundSkill{}
	for _, fs := range r.search.found {
		su.Skills = append(su.Skills, *fs)
	}
	sort.Slice(su.Skills, func(i, j int) bool {
		a, b := su.Skills[i], su.Skills[j]
		if a.Found != b.Found {
			return a.Found > b.Found
		}
		return a.Name < b.Name
	})
	su.NoMatchQueries = []QueryCount{}
	for q, n := range r.search.noMatch {
		su.NoMatchQueries = append(su.NoMatchQueries, QueryCount{Query: q, Count: n})
	}
	sort.Slice(su.NoMatchQueries, func(i, j int) bool {
		a, b := su.NoMatchQueries[i], su.NoMatchQueries[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Query < b.Query
	})
	return su
}
