package projection

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/processor/usage"
)

// Step is the width of one point of a series: an hour or a day (UTC).
type Step string

const (
	ByHour Step = "hour"
	ByDay  Step = "day"
)

// ParseStep reads a step's name.
func ParseStep(s string) (Step, error) {
	switch Step(s) {
	case ByHour, ByDay:
		return Step(s), nil
	}
	return "", fmt.Errorf("step %q: want hour or day", s)
}

func (s Step) width() time.Duration {
	if s == ByDay {
		return 24 * time.Hour
	}
	return time.Hour
}

// DefaultWindow is the window a series covers when the caller names none:
// two days by the hour, thirty by the day.
func (s Step) DefaultWindow() time.Duration {
	if s == ByDay {
		return 30 * 24 * time.Hour
	}
	return 48 * time.Hour
}

// MaxSeriesHours bounds the hours one series reads: 92 days.
const MaxSeriesHours = 92 * 24

// Series is usage over time as the projection keeps it: one point per
// hour or day (UTC) of a window, every point present (zero when nothing
// happened), in total and per skill.
type Series struct {
	Step Step      `json:"step"`
	From time.Time `json:"from"`
	To   time.Time `json:"to"` // the start of the last point
	// Times are the points' starts, Unix seconds.
	Times []int64 `json:"times"`
	Total Totals  `json:"total"`
	// Skills are the skills used, found or failing in the window, by
	// name (usage.OtherSkill past usage.MaxSkills).
	Skills []SkillSeries `json:"skills"`
	// Partial says what the series could not give whole; AppliedSeq is
	// the stream sequence the projection had applied when read, and
	// LagRecords the output records after it (counted into the series
	// when LagCounted).
	Partial    []string `json:"partial"`
	AppliedSeq uint64   `json:"appliedSeq"`
	LagRecords uint64   `json:"lagRecords"`
	LagCounted bool     `json:"lagCounted"`
	// Partitions, when 2 or more, says that the series sums that many
	// partitions' projections (ReadSeriesPartitions).
	Partitions int `json:"partitions,omitempty"`
}

// Totals are the series of every skill and search together. Errors are
// skill calls and searches answered with an error; SearchThenLoad the
// skills a search returned that the same session loaded within the hour
// (a pair once).
type Totals struct {
	Loads          []int `json:"loads"`
	Searches       []int `json:"searches"`
	SearchThenLoad []int `json:"searchThenLoad"`
	NoMatch        []int `json:"noMatch"`
	Errors         []int `json:"errors"`
}

// SkillSeries is one skill's series: its loads, the searches that
// returned it (Found), its loads after such a search (SearchThenLoad),
// its errors, and per revision and channel of the store its loads and
// errors (canary against stable), when its records name them.
type SkillSeries struct {
	Name           string          `json:"name"`
	Loads          []int           `json:"loads"`
	Found          []int           `json:"found"`
	SearchThenLoad []int           `json:"searchThenLoad"`
	Errors         []int           `json:"errors"`
	Releases       []ReleaseSeries `json:"releases,omitempty"`
}

// ReleaseSeries is one revision and channel's part of a skill's series.
type ReleaseSeries struct {
	Rev     uint64 `json:"rev"`
	Channel string `json:"channel"`
	Loads   []int  `json:"loads"`
	Errors  []int  `json:"errors"`
}

// Skill returns the series of name, nil when the window has none.
func (s *Series) Skill(name string) *SkillSeries {
	for i := range s.Skills {
		if s.Skills[i].Name == name {
			return &s.Skills[i]
		}
	}
	return nil
}

// ReadSeries reads the projection's hour buckets from the hour of from to
// the hour of to (zero to: now; zero from: to less step.DefaultWindow())
// into a series of step. The records the stream holds after the
// projection's position are counted too while they are at most TailMax,
// as Read counts them, so a series and a report of one moment agree. A
// window wider than MaxSeriesHours is an error.
func ReadSeries(ctx context.Context, js jetstream.JetStream, opts Options, step Step, from, to time.Time) (*Series, error) {
	if _, err := ParseStep(string(step)); err != nil {
		return nil, err
	}
	o, st, kv, pos, err := open(ctx, js, opts)
	if err != nil {
		return nil, err
	}
	if to.IsZero() {
		to = time.Now()
	}
	if from.IsZero() {
		from = to.Add(-step.DefaultWindow() + step.width())
	}
	w := step.width()
	from, to = from.UTC().Truncate(w), to.UTC().Truncate(w)
	if to.Before(from) {
		return nil, fmt.Errorf("series: the window ends (%s) before it starts (%s)", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	hours := int(to.Add(w).Sub(from) / time.Hour)
	if hours > MaxSeriesHours {
		return nil, fmt.Errorf("series: a window of %d hours; at most %d (%d days) are read at once", hours, MaxSeriesHours, MaxSeriesHours/24)
	}
	tl, err := readTail(ctx, st, o, pos)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", o.Stream, err)
	}
	got, err := getHours(ctx, kv, from, hours)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", o.Bucket, err)
	}
	n := int(to.Sub(from)/w) + 1
	b := newSeriesBuilder(step, from, n)
	b.s.AppliedSeq = pos.Seq
	var tailHours map[int64][]record
	if tl != nil {
		tailHours = tl.byHour
		b.s.LagRecords, b.s.LagCounted = tl.outputs, true
	} else if b.s.LagRecords, _, err = lag(ctx, st, o, pos); err != nil {
		return nil, fmt.Errorf("stream %s: %w", o.Stream, err)
	}
	for i, val := range got {
		t := from.Add(time.Duration(i) * time.Hour)
		var h *Hour
		if val != nil {
			dh, err := DecodeHour(val)
			switch {
			case err != nil:
				b.note("hour buckets that cannot be read, not counted", HourKey(t))
				continue
			case dh.Gen != pos.Gen:
				b.note("hour buckets of an older generation, not counted", HourKey(t))
			default:
				h = dh
			}
		}
		if recs := tailHours[t.Unix()]; len(recs) > 0 {
			if h == nil {
				h = newHour(pos.Gen, t)
			}
			for _, r := range recs {
				if r.seq > h.Seq {
					h.Apply(r.out, r.seq, r.at)
				}
			}
		}
		if h != nil {
			b.add(int(t.Sub(from)/w), HourKey(t), h)
		}
	}
	return b.finish(), nil
}

// getHours reads n hour buckets from from, one get each, getWorkers at a
// time: nil where a bucket has no value.
func getHours(ctx context.Context, kv jetstream.KeyValue, from time.Time, n int) ([][]byte, error) {
	vals := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(getWorkers, n) {
		wg.Go(func() {
			for i := range next {
				e, err := kv.Get(ctx, HourKey(from.Add(time.Duration(i)*time.Hour)))
				switch {
				case errors.Is(err, jetstream.ErrKeyNotFound):
				case err != nil:
					errs[i] = err
				default:
					vals[i] = e.Value()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", HourKey(from.Add(time.Duration(i)*time.Hour)), err)
		}
	}
	return vals, nil
}

// seriesBuilder sums hours into a series' points.
type seriesBuilder struct {
	s      Series
	n      int
	skills map[string]*SkillSeries
	rels   map[string]map[usage.ReleaseKey]*ReleaseSeries
	notes  map[string][]string
	order  []string
}

func newSeriesBuilder(step Step, from time.Time, n int) *seriesBuilder {
	b := &seriesBuilder{n: n, skills: map[string]*SkillSeries{}, rels: map[string]map[usage.ReleaseKey]*ReleaseSeries{}, notes: map[string][]string{}}
	b.s = Series{Step: step, From: from, To: from.Add(time.Duration(n-1) * step.width()), Times: make([]int64, n), Partial: []string{}, Skills: []SkillSeries{}}
	for i := range n {
		b.s.Times[i] = from.Add(time.Duration(i) * step.width()).Unix()
	}
	t := &b.s.Total
	t.Loads, t.Searches, t.SearchThenLoad, t.NoMatch, t.Errors = make([]int, n), make([]int, n), make([]int, n), make([]int, n), make([]int, n)
	return b
}

func (b *seriesBuilder) note(what, key string) {
	if _, ok := b.notes[what]; !ok {
		b.order = append(b.order, what)
	}
	b.notes[what] = append(b.notes[what], key)
}

func (b *seriesBuilder) skill(name string) *SkillSeries {
	if r, ok := b.skills[name]; ok {
		return r
	}
	if len(b.skills) >= usage.MaxSkills {
		b.note(usage.FoldedSkills(usage.MaxSkills)+" in the window", "")
		name = usage.OtherSkill
		if r, ok := b.skills[name]; ok {
			return r
		}
	}
	r := &SkillSeries{Name: name, Loads: make([]int, b.n), Found: make([]int, b.n), SearchThenLoad: make([]int, b.n), Errors: make([]int, b.n)}
	b.skills[name] = r
	return r
}

// add sums hour h (key) into point i.
func (b *seriesBuilder) add(i int, key string, h *Hour) {
	if h.Shed {
		b.note("hour buckets too large to keep whole (some rows under _other, search-then-load pairs dropped)", key)
	}
	if h.Damaged {
		b.note("hour buckets that replaced an unreadable value, counting only what came after", key)
	}
	if h.Search.PairsCut && !h.Shed {
		b.note(fmt.Sprintf("hours with more than %d search results to follow; search-then-load counts short", HourFoundPairs), key)
	}
	t := &b.s.Total
	hs := &h.Search
	t.Searches[i] += hs.Searches
	t.NoMatch[i] += hs.NoMatch
	t.SearchThenLoad[i] += hs.ThenLoaded
	for _, n := range hs.Errors {
		t.Errors[i] += n
	}
	for name, r := range h.Skills {
		sk := b.skill(name)
		sk.Loads[i] += r.Loads
		sk.SearchThenLoad[i] += r.AfterSearch
		t.Loads[i] += r.Loads
		for _, n := range r.Errors {
			sk.Errors[i] += n
			t.Errors[i] += n
		}
		for k, rh := range r.Releases {
			rk, ok := parseReleaseKey(k)
			if !ok || rh == nil {
				continue
			}
			m := b.rels[sk.Name]
			if m == nil {
				m = map[usage.ReleaseKey]*ReleaseSeries{}
				b.rels[sk.Name] = m
			}
			rs := m[rk]
			if rs == nil {
				if len(m) >= usage.MaxReleases {
					b.note(fmt.Sprintf("more than %d revisions and channels of a skill; the rest not split", usage.MaxReleases), "")
					continue
				}
				rs = &ReleaseSeries{Rev: rk.Rev, Channel: rk.Channel, Loads: make([]int, b.n), Errors: make([]int, b.n)}
				m[rk] = rs
			}
			rs.Loads[i] += rh.Loads
			rs.Errors[i] += rh.Errors
		}
	}
	for name, n := range hs.Skills {
		b.skill(name).Found[i] += n
	}
}

func (b *seriesBuilder) finish() *Series {
	s := b.s
	for name, r := range b.skills {
		for _, rs := range b.rels[name] {
			r.Releases = append(r.Releases, *rs)
		}
		sort.Slice(r.Releases, func(i, j int) bool {
			a, c := r.Releases[i], r.Releases[j]
			if a.Rev != c.Rev {
				return a.Rev < c.Rev
			}
			return a.Channel < c.Channel
		})
		s.Skills = append(s.Skills, *r)
	}
	sort.Slice(s.Skills, func(i, j int) bool { return s.Skills[i].Name < s.Skills[j].Name })
	for _, what := range b.order {
		keys := b.notes[what]
		switch {
		case keys[0] == "":
			s.Partial = append(s.Partial, what)
		case len(keys) > 5:
			s.Partial = append(s.Partial, fmt.Sprintf("%s: %s and %d more", what, joinKeys(keys[:5]), len(keys)-5))
		default:
			s.Partial = append(s.Partial, what+": "+joinKeys(keys))
		}
	}
	return &s
}

func joinKeys(keys []string) string {
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += ", "
		}
		out += k
	}
	return out
}
