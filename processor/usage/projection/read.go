package projection

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/usage"
)

// ErrNoProjection reports that there is no projection to read: no
// bucket, no position yet, or a bucket that projects another stream.
var ErrNoProjection = errors.New("no usage projection")

// NotKept names the report's fields the projection does not keep: they
// follow each session's searches and loads through time, which hour sums
// cannot. usage --scan reports them.
var NotKept = []string{"searches.foundThenLoaded", "searches.bySession", "searches.skills.sessions", "searches.skills.loadedAfter"}

// getMax is the widest window read with one get per hour; a wider one is
// read by one pass over every hour bucket.
const getMax = 512

// getWorkers is how many gets are in flight at once.
const getWorkers = 16

// open finds the projection opts names: its stream, bucket and position,
// checked to be the projection of that stream.
func open(ctx context.Context, js jetstream.JetStream, opts Options) (Options, jetstream.Stream, jetstream.KeyValue, Position, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return Options{}, nil, nil, Position{}, err
	}
	st, err := js.Stream(ctx, o.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return Options{}, nil, nil, Position{}, fmt.Errorf("stream %s does not exist", o.Stream)
	}
	if err != nil {
		return Options{}, nil, nil, Position{}, fmt.Errorf("stream %s: %w", o.Stream, err)
	}
	if want := events.StreamSubjects(o.Prefix); !slices.Contains(st.CachedInfo().Config.Subjects, want) {
		return Options{}, nil, nil, Position{}, fmt.Errorf("stream %s holds subjects %q, not %s: %w", o.Stream, st.CachedInfo().Config.Subjects, want, usage.ErrNotSessionStream)
	}
	kv, err := js.KeyValue(ctx, o.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return Options{}, nil, nil, Position{}, fmt.Errorf("%w: bucket %s does not exist", ErrNoProjection, o.Bucket)
	}
	if err != nil {
		return Options{}, nil, nil, Position{}, fmt.Errorf("bucket %s: %w", o.Bucket, err)
	}
	e, err := kv.Get(ctx, posKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Options{}, nil, nil, Position{}, fmt.Errorf("%w: bucket %s has no position yet", ErrNoProjection, o.Bucket)
	}
	if err != nil {
		return Options{}, nil, nil, Position{}, fmt.Errorf("bucket %s: position: %w", o.Bucket, err)
	}
	pos, err := decodePosition(e.Value())
	if err != nil {
		return Options{}, nil, nil, Position{}, fmt.Errorf("%w: bucket %s: %w", ErrNoProjection, o.Bucket, err)
	}
	if err := (&Projector{opts: o}).matches(pos); err != nil {
		return Options{}, nil, nil, Position{}, fmt.Errorf("%w: %w", ErrNoProjection, err)
	}

	return o, st, kv, pos, nil
}

// Read sums the hour buckets of the window from since (zero: every hour
// the projection holds) to now into a report of the keys usage.Read
// gives, with Report.Projection saying what the projection covered, how
// far it lags the stream and what it does not keep. The window starts at
// the hour of since: the projection counts by the hour (UTC).
func Read(ctx context.Context, js jetstream.JetStream, opts Options, since time.Time) (*usage.Report, error) {
	return read(ctx, js, []Options{opts}, since)
}

// ReadPartitions is Read over the projections of n partitioned session
// streams, summed into one report: partition k's projection, of stream
// events.PartitionStream(opts.Stream, k) under
// events.PartitionPrefix(opts.Prefix, k), is kept in bucket
// PartitionBucket(opts.Bucket, k). A session is kept in one partition,
// so the partitions' distinct sessions add up exactly (their sketches
// merge as two hours' do). The report's Partitions is n; its
// projection's Bucket is opts.Bucket's name, AppliedSeq zero (each
// partition has its own sequences), AppliedAt the oldest of theirs and
// the lag the sum of theirs.
func ReadPartitions(ctx context.Context, js jetstream.JetStream, opts Options, n int, since time.Time) (*usage.Report, error) {
	if n < 2 {
		return Read(ctx, js, opts, since)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	parts := make([]Options, n)
	for k := range parts {
		parts[k] = o.partition(k)
	}
	rep, err := read(ctx, js, parts, since)
	if err != nil {
		return nil, err
	}
	rep.Stream, rep.Prefix, rep.Partitions = o.Stream, o.Prefix, n
	rep.Projection.Bucket = o.Bucket
	return rep, nil
}

// read sums the windows of one or more projections (each partition's)
// into one report.
func read(ctx context.Context, js jetstream.JetStream, parts []Options, since time.Time) (*usage.Report, error) {
	m := newMerger(0)
	info := &usage.ProjectionInfo{Since: since, NotKept: slices.Clone(NotKept), Partial: []string{}, LagCounted: true}
	var stream, prefix string
	for i, opts := range parts {
		o, st, kv, pos, err := open(ctx, js, opts)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			info.Bucket, info.AppliedSeq = o.Bucket, pos.Seq
			stream, prefix = o.Stream, o.Prefix
		}
		if pos.From.After(info.CountsFrom) {
			info.CountsFrom = pos.From
		}
		if info.AppliedAt.IsZero() || pos.Time.Before(info.AppliedAt) {
			info.AppliedAt = pos.Time
		}
		m.gen, m.tail = pos.Gen, nil
		tail, err := readTail(ctx, st, o, pos)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", o.Stream, err)
		}
		now := time.Now().UTC()
		var from, to time.Time
		switch {
		case !since.IsZero():
			from = since.UTC().Truncate(time.Hour)
		case !pos.First.IsZero():
			from = pos.First.UTC().Truncate(time.Hour)
		}
		to = now.Truncate(time.Hour)
		if pos.Time.After(now) { // the server's clock ahead of ours
			to = pos.Time.UTC().Truncate(time.Hour)
		}
		if tail != nil {
			for h := range tail.byHour {
				t := time.Unix(h, 0).UTC()
				if since.IsZero() && (from.IsZero() || t.Before(from)) {
					from = t
				}
				if t.After(to) {
					to = t
				}
			}
			m.tail = tail.byHour
		}
		if !from.IsZero() && !from.After(to) {
			hours := int(to.Sub(from)/time.Hour) + 1
			info.Hours = max(info.Hours, hours)
			if hours <= getMax {
				err = m.get(ctx, kv, from, hours)
			} else {
				err = m.scan(ctx, kv, from, to)
			}
			if err != nil {
				return nil, fmt.Errorf("bucket %s: %w", o.Bucket, err)
			}
			m.addTail(from, to)
		}
		if tail != nil {
			info.LagRecords += tail.outputs
			if base := pos.Time; tail.outputs > 0 {
				if base.IsZero() {
					base = tail.first
				}
				info.LagSeconds = max(info.LagSeconds, tail.newest.Sub(base).Seconds())
			}
		} else {
			records, seconds, err := lag(ctx, st, o, pos)
			if err != nil {
				return nil, fmt.Errorf("stream %s: %w", o.Stream, err)
			}
			info.LagRecords += records
			info.LagSeconds = max(info.LagSeconds, seconds)
			info.LagCounted = false
		}
	}
	sum := m.report()
	sum.Stream, sum.Prefix = stream, prefix
	if !since.IsZero() {
		sum.Since = since.UTC().Truncate(time.Hour)
	}
	info.Read = m.read
	info.Partial = m.partial()
	sum.Partial = info.Partial
	sum.Projection = info
	return sum, nil
}

// get reads n hours from from, one get each, getWorkers at a time.
func (m *merger) get(ctx context.Context, kv jetstream.KeyValue, from time.Time, n int) error {
	type got struct {
		key string
		val []byte
		err error
	}
	res := make([]got, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(getWorkers, n) {
		wg.Go(func() {
			for i := range next {
				key := HourKey(from.Add(time.Duration(i) * time.Hour))
				e, err := kv.Get(ctx, key)
				switch {
				case errors.Is(err, jetstream.ErrKeyNotFound):
				case err != nil:
					res[i] = got{key: key, err: err}
				default:
					res[i] = got{key: key, val: e.Value()}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, g := range res {
		if g.err != nil {
			return fmt.Errorf("read %s: %w", g.key, g.err)
		}
		if g.val != nil {
			m.add(g.key, g.val)
		}
	}
	return nil
}

// scan reads every hour bucket once (the newest value of each key) and
// keeps those from from to to.
func (m *merger) scan(ctx context.Context, kv jetstream.KeyValue, from, to time.Time) error {
	w, err := kv.Watch(ctx, "h.*", jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("read the hours: the watch ended")
			}
			if e == nil { // every hour delivered
				return nil
			}
			t, err := hourOfKey(e.Key())
			if err != nil || t.Before(from) || t.After(to) {
				continue
			}
			m.add(e.Key(), e.Value())
		}
	}
}

// TailMax is the most records after the projection's position that Read
// reads from the stream and counts (the projection a little behind: a
// serve stopped, or busy); past it the report only says how far behind
// the projection is.
const TailMax = 10000

var tailMax = TailMax // lowered by tests

// tail is what the stream holds after the projection's position.
type tail struct {
	byHour        map[int64][]record
	outputs       uint64
	first, newest time.Time
}

// readTail reads the records after the position when there are at most
// TailMax of them (nil when there are more), its output records by hour.
func readTail(ctx context.Context, st jetstream.Stream, o Options, pos Position) (*tail, error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.StreamSubjects(o.Prefix)}}
	switch {
	case pos.Seq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, pos.Seq+1
	case !pos.From.IsZero():
		t := pos.From
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	default:
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	cfg.InactiveThreshold = usage.ReaderInactive
	cons, err := st.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("read after the projection: %w", err)
	}
	defer usage.DeleteReader(ctx, st, cons)
	ci, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("read after the projection: %w", err)
	}
	tl := &tail{byHour: map[int64][]record{}}
	if ci.NumPending > uint64(tailMax) {
		return nil, nil
	}
	if ci.NumPending == 0 {
		return tl, nil
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(512))
	if err != nil {
		return nil, fmt.Errorf("read after the projection: %w", err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextMaxWait(30 * time.Second))
		if err != nil {
			return nil, fmt.Errorf("read after the projection: %w", err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return nil, fmt.Errorf("read after the projection: %w", err)
		}
		if isOutput(o.Layout, o.Prefix, msg.Subject()) {
			out := usage.ReadOutput(ctx, st.GetMsg, o.Layout, o.Prefix, msg.Subject(), msg.Headers().Get(events.HeaderContentType), msg.Data())
			at := md.Timestamp.UTC()
			h := at.Truncate(time.Hour).Unix()
			tl.byHour[h] = append(tl.byHour[h], record{seq: md.Sequence.Stream, at: at, out: out})
			tl.outputs++
			if tl.first.IsZero() {
				tl.first = at
			}
			tl.newest = at
		}
		if md.NumPending == 0 {
			return tl, nil
		}
	}
}

// lag counts the output records after the position and the time from
// the position's record to the newest of them.
func lag(ctx context.Context, st jetstream.Stream, o Options, pos Position) (records uint64, seconds float64, err error) {
	fs := filters(o.Layout, o.Prefix)
	var last *jetstream.RawStreamMsg
	for _, f := range fs {
		msg, err := st.GetLastMsgForSubject(ctx, f)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("newest output: %w", err)
		}
		if last == nil || msg.Sequence > last.Sequence {
			last = msg
		}
	}
	if last == nil || last.Sequence <= pos.Seq {
		return 0, 0, nil
	}
	c, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{
		FilterSubjects: fs, AckPolicy: jetstream.AckNonePolicy,
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: pos.Seq + 1,
		InactiveThreshold: 10 * time.Second, MemoryStorage: true,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("count the records not applied: %w", err)
	}
	records = c.CachedInfo().NumPending
	_ = st.DeleteConsumer(ctx, c.CachedInfo().Name)
	base := pos.Time
	if base.IsZero() { // nothing applied yet: from the oldest record not applied
		for _, f := range fs {
			msg, err := st.GetMsg(ctx, pos.Seq+1, jetstream.WithGetMsgSubject(f))
			if err == nil && (base.IsZero() || msg.Time.Before(base)) {
				base = msg.Time
			}
		}
	}
	if !base.IsZero() {
		seconds = max(0, last.Time.Sub(base).Seconds())
	}
	return records, seconds, nil
}

// merger sums hour buckets into a report.
type merger struct {
	gen        uint64
	tail       map[int64][]record // read after the position, by hour
	rep        usage.Report
	skills     map[string]*skillAcc
	listed     map[string]struct{}
	found      map[string]int
	noMatch    map[string]int
	searchSess Sketch
	read       int
	// What is partial.
	listedCut, setsCut bool
	shed, damaged      []string
	coarse             []string // hours whose sketches were made smaller
	folded             []string // hours with skills counted under _other
	foldedAll          bool     // skills past usage.MaxSkills in the window
	unreadable         []string
	stale              int
}

type skillAcc struct {
	row         usage.SkillUsage
	sess        Sketch
	first, last int64
	digests     map[string]struct{}
	revs        map[uint64]struct{}
	releases    map[usage.ReleaseKey]*usage.ReleaseUsage
}

func newMerger(gen uint64) *merger {
	return &merger{gen: gen, skills: map[string]*skillAcc{}, listed: map[string]struct{}{}, found: map[string]int{}, noMatch: map[string]int{},
		rep: usage.Report{Catalogs: usage.CatalogUsage{Appends: map[string]int{"initial": 0, "replacement": 0, "tombstone": 0},
			BytesByKind: map[string]int64{"initial": 0, "replacement": 0, "tombstone": 0}}}}
}

// add sums one hour bucket's value, and the records read after the
// projection's position that the bucket does not hold yet (those above
// its sequence: the bucket may have been written since the position was
// read).
func (m *merger) add(key string, val []byte) {
	h, err := DecodeHour(val)
	if err != nil {
		m.unreadable = append(m.unreadable, key+" ("+err.Error()+")")
		if t, err := hourOfKey(key); err == nil {
			delete(m.tail, t.Unix()) // the hour is not counted
		}
		return
	}
	if h.Gen != m.gen {
		m.stale++
		return // its tail, if any, counts as an hour of its own
	}
	m.read++
	if recs, ok := m.tail[h.Hour]; ok {
		delete(m.tail, h.Hour)
		for _, r := range recs {
			if r.seq > h.Seq {
				h.Apply(r.out, r.seq, r.at)
			}
		}
	}
	m.merge(key, h)
}

// addTail sums the hours of the window from..to that only the records
// read after the position hold.
func (m *merger) addTail(from, to time.Time) {
	for hour, recs := range m.tail {
		t := time.Unix(hour, 0)
		if t.Before(from) || t.After(to) {
			continue
		}
		h := newHour(m.gen, t)
		for _, r := range recs {
			h.Apply(r.out, r.seq, r.at)
		}
		m.merge(HourKey(t), h)
	}
	m.tail = nil
}

// merge sums one hour.
func (m *merger) merge(key string, h *Hour) {
	if h.Shed {
		m.shed = append(m.shed, key)
	} else if _, ok := h.Skills[usage.OtherSkill]; ok {
		m.folded = append(m.folded, key)
	} else if _, ok := h.Search.Skills[usage.OtherSkill]; ok {
		m.folded = append(m.folded, key)
	}
	if h.Damaged {
		m.damaged = append(m.damaged, key)
	}
	if h.Coarse {
		m.coarse = append(m.coarse, key)
	}
	m.rep.Records += h.Records
	m.rep.Unreadable += h.Unreadable
	for name, r := range h.Skills {
		a := m.skill(name)
		a.row.Loads += r.Loads
		a.row.Invocations += r.Invocations
		for c, n := range r.Errors {
			a.row.Errors[c] += n
		}
		a.sess.merge(&r.Sessions, mergeSparseMax)
		if r.First != 0 && (a.first == 0 || r.First < a.first) {
			a.first = r.First
		}
		a.last = max(a.last, r.Last)
		for _, d := range r.Digests {
			a.digests[d] = struct{}{}
		}
		for _, v := range r.Revisions {
			a.revs[v] = struct{}{}
		}
		for k, rh := range r.Releases {
			rk, ok := parseReleaseKey(k)
			if !ok || rh == nil {
				continue
			}
			ru := a.releases[rk]
			if ru == nil {
				if len(a.releases) >= usage.MaxReleases {
					m.setsCut = true
					continue
				}
				if a.releases == nil {
					a.releases = map[usage.ReleaseKey]*usage.ReleaseUsage{}
				}
				ru = &usage.ReleaseUsage{Rev: rk.Rev, Channel: rk.Channel}
				a.releases[rk] = ru
			}
			ru.Loads += rh.Loads
			ru.Errors += rh.Errors
		}
		m.setsCut = m.setsCut || r.SetsCut
	}
	c := &m.rep.Catalogs
	for k, n := range h.Catalogs.Appends {
		c.Appends[k] += n
	}
	for k, n := range h.Catalogs.Bytes {
		c.BytesByKind[k] += n
		c.TextBytes += n
	}
	for _, name := range h.Catalogs.Listed {
		if len(m.listed) < usage.MaxSkills {
			m.listed[name] = struct{}{}
		} else if _, ok := m.listed[name]; !ok {
			m.listedCut = true
		}
	}
	m.listedCut = m.listedCut || h.Catalogs.ListedCut
	s, hs := &m.rep.Searches, &h.Search
	s.Searches += hs.Searches
	s.Found += hs.Found
	s.NoMatch += hs.NoMatch
	s.NoMatchOther += hs.NoMatchOther
	for c, n := range hs.Errors {
		if s.Errors == nil {
			s.Errors = map[string]int{}
		}
		s.Errors[c] += n
	}
	m.searchSess.merge(&hs.Sessions, mergeSparseMax)
	for name, n := range hs.Skills {
		if _, ok := m.found[name]; !ok && len(m.found) >= usage.MaxSkills {
			name = usage.OtherSkill
			m.foldedAll = true
		}
		m.found[name] += n
	}
	for q, n := range hs.NoMatchQueries {
		if _, ok := m.noMatch[q]; ok || len(m.noMatch) < usage.MaxQueries {
			m.noMatch[q] += n
		} else {
			s.NoMatchOther += n
		}
	}
}

// skill returns the accumulator of a row, usage.OtherSkill past
// usage.MaxSkills rows.
func (m *merger) skill(name string) *skillAcc {
	if a, ok := m.skills[name]; ok {
		return a
	}
	if len(m.skills) >= usage.MaxSkills {
		name = usage.OtherSkill
		m.foldedAll = true
		if a, ok := m.skills[name]; ok {
			return a
		}
	}
	a := &skillAcc{row: usage.SkillUsage{Name: name, Errors: map[string]int{}}, digests: map[string]struct{}{}, revs: map[uint64]struct{}{}}
	m.skills[name] = a
	return a
}

// report finishes the sums as usage.Read finishes its own.
func (m *merger) report() *usage.Report {
	rep := m.rep
	rep.Skills = []usage.SkillUsage{}
	for _, a := range m.skills {
		row := a.row
		n, exact := a.sess.Count()
		row.Sessions, row.SessionsEstimated = n, !exact
		if a.first != 0 {
			row.First = time.Unix(0, a.first).UTC()
		}
		if a.last != 0 {
			row.Last = time.Unix(0, a.last).UTC()
		}
		row.Digests, row.Revisions = usage.SortedKeys(a.digests), usage.SortedKeys(a.revs)
		row.Releases = usage.Releases(a.releases)
		rep.Skills = append(rep.Skills, row)
	}
	usage.SortByUse(rep.Skills)
	rep.ListedNeverUsed = usage.NeverUsed(m.listed, func(name string) bool {
		a, ok := m.skills[name]
		return ok && a.row.Loads+a.row.Invocations > 0
	})
	rep.Catalogs.Listed = len(m.listed)
	rep.Catalogs.EstimatedTokens = (rep.Catalogs.TextBytes + usage.TokenBytes - 1) / usage.TokenBytes

	su := &rep.Searches
	if su.Errors == nil {
		su.Errors = map[string]int{}
	}
	n, exact := m.searchSess.Count()
	su.Sessions, su.SessionsEstimated = n, !exact
	if su.Sessions > 0 {
		su.PerSession = float64(su.Searches) / float64(su.Sessions)
	}
	su.BySession = []usage.SessionSearches{}
	su.Skills = []usage.FoundSkill{}
	for name, n := range m.found {
		su.Skills = append(su.Skills, usage.FoundSkill{Name: name, Found: n})
	}
	sort.Slice(su.Skills, func(i, j int) bool {
		a, b := su.Skills[i], su.Skills[j]
		if a.Found != b.Found {
			return a.Found > b.Found
		}
		return a.Name < b.Name
	})
	su.NoMatchQueries = []usage.QueryCount{}
	for q, n := range m.noMatch {
		su.NoMatchQueries = append(su.NoMatchQueries, usage.QueryCount{Query: q, Count: n})
	}
	sort.Slice(su.NoMatchQueries, func(i, j int) bool {
		a, b := su.NoMatchQueries[i], su.NoMatchQueries[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Query < b.Query
	})
	return &rep
}

// partial says what of the window is incomplete.
func (m *merger) partial() []string {
	out := []string{}
	list := func(keys []string) string {
		if len(keys) > 5 {
			return strings.Join(keys[:5], ", ") + fmt.Sprintf(" and %d more", len(keys)-5)
		}
		return strings.Join(keys, ", ")
	}
	if len(m.unreadable) > 0 {
		out = append(out, "hour buckets that cannot be read, not counted: "+list(m.unreadable))
	}
	if len(m.damaged) > 0 {
		out = append(out, "hour buckets that replaced an unreadable value, counting only what came after: "+list(m.damaged))
	}
	if len(m.shed) > 0 {
		out = append(out, "hour buckets too large to keep whole (sets dropped, some rows under _other): "+list(m.shed))
	}
	if len(m.coarse) > 0 {
		out = append(out, fmt.Sprintf("hour buckets too large for full-precision session sketches (distinct sessions estimated with down to %d registers, about %.1f%%): %s",
			1<<MinPrecision, 104/math.Sqrt(1<<MinPrecision), list(m.coarse)))
	}
	if len(m.folded) > 0 {
		out = append(out, usage.FoldedSkills(HourSkills)+" in an hour: "+list(m.folded))
	}
	if m.foldedAll {
		out = append(out, usage.FoldedSkills(usage.MaxSkills)+" in the window")
	}
	if m.stale > 0 {
		out = append(out, fmt.Sprintf("%d hour buckets of an older generation, not counted", m.stale))
	}
	if m.listedCut {
		out = append(out, fmt.Sprintf("listed skills: more than %d in an hour (or %d in all); listedNeverUsed may miss some", HourListed, usage.MaxSkills))
	}
	if m.setsCut {
		out = append(out, fmt.Sprintf("digests and revisions: at most %d and %d per skill and hour are kept", HourDigests, HourRevisions))
	}
	return out
}
