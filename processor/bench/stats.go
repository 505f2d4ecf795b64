package bench

import (
	"slices"
	"sync"
	"time"
)

// Latency series the bench records, per phase.
const (
	SeriesPreStep   = "pre-step"           // every answered pre-step
	SeriesUnchanged = "pre-step unchanged" // nothing appended (baseline: no append asked)
	SeriesAppended  = "pre-step appended"  // a catalog appended (baseline: append asked)
	// SeriesInvoked: an unchanged pre-step whose userText invoked one
	// skill (one skill.invocation appended); only with --gestures.
	SeriesInvoked     = "pre-step unchanged + invocation"
	SeriesSkillCall   = "skill call"   // every answered skill call
	SeriesSkillSearch = "skill search" // every answered skill search
)

// Series lists the series in report order.
var Series = []string{SeriesPreStep, SeriesUnchanged, SeriesInvoked, SeriesAppended, SeriesSkillCall, SeriesSkillSearch}

// Samples collects latency samples of one phase. Sessions record into
// a local Local and merge it once, at their end, so that recording
// costs no lock on the hot path.
type Samples struct {
	mu sync.Mutex
	by map[string][]time.Duration
}

func NewSamples() *Samples {
	return &Samples{by: map[string][]time.Duration{}}
}

// Local is one session's samples.
type Local map[string][]time.Duration

func (l Local) add(series string, d time.Duration) { l[series] = append(l[series], d) }

// merge adds a session's samples.
func (s *Samples) merge(l Local) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range l {
		s.by[k] = append(s.by[k], v...)
	}
}

// summaries returns the latency summary of every series that has samples.
func (s *Samples) summaries() map[string]Latency {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Latency{}
	for k, v := range s.by {
		if len(v) > 0 {
			out[k] = summarize(v)
		}
	}
	return out
}

// Latency summarises a latency series; durations are in microseconds
// in the JSON report.
type Latency struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_us"`
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	P99  float64 `json:"p99_us"`
	Max  float64 `json:"max_us"`
}

// summarize computes exact percentiles (nearest rank) of samples; it sorts
// samples in place.
func summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(samples))+0.999999) - 1 // nearest rank: ceil(p·n)−1
		return samples[min(max(i, 0), len(samples)-1)]
	}
	return Latency{
		N:    len(samples),
		Mean: us(sum / time.Duration(len(samples))),
		P50:  us(rank(0.50)),
		P90:  us(rank(0.90)),
		P99:  us(rank(0.99)),
		Max:  us(samples[len(samples)-1]),
	}
}
