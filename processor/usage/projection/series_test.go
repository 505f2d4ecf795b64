package projection

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/usage"
)

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestSeriesEqualsScan: the hourly and daily series of a recorded
// workload, kept by a running projector, sum to what a scan of the stream
// counts: loads, searches, searches that found nothing, errors and the
// skills found then loaded, in total and per skill.
func TestSeriesEqualsScan(t *testing.T) {
	_, l := newSessionLog(t, events.LayoutFlat)
	l.record(0, 40)
	o := l.opts()
	run(t, l.js, o)
	caughtUp(t, l.js, o)
	scan := l.scan()
	if scan.Searches.FoundThenLoaded == 0 || scan.Searches.NoMatch == 0 {
		t.Fatalf("the workload is too thin: %+v", scan.Searches)
	}
	for _, step := range []Step{ByHour, ByDay} {
		s, err := ReadSeries(context.Background(), l.js, o, step, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		want := 48
		if step == ByDay {
			want = 30
		}
		if len(s.Times) != want || len(s.Total.Loads) != want || s.Step != step || len(s.Partial) != 0 || s.LagRecords != 0 {
			t.Fatalf("%s: %d points (want %d), partial %v, lag %d", step, len(s.Times), want, s.Partial, s.LagRecords)
		}
		if w := int64(step.width() / time.Second); s.Times[1]-s.Times[0] != w || s.Times[want-1] != s.To.Unix() {
			t.Errorf("%s: times %v", step, s.Times)
		}
		loads, skillErrs, searchErrs := 0, 0, 0
		for _, r := range scan.Skills {
			loads += r.Loads
			for _, n := range r.Errors {
				skillErrs += n
			}
			got := s.Skill(r.Name)
			if got == nil {
				if r.Loads+sumErr(r.Errors) > 0 {
					t.Errorf("%s: no series of %s", step, r.Name)
				}
				continue
			}
			if sum(got.Loads) != r.Loads || sum(got.Errors) != sumErr(r.Errors) {
				t.Errorf("%s: %s loads %d errors %d; the scan %d, %d", step, r.Name, sum(got.Loads), sum(got.Errors), r.Loads, sumErr(r.Errors))
			}
		}
		for _, n := range scan.Searches.Errors {
			searchErrs += n
		}
		for _, f := range scan.Searches.Skills {
			if got := s.Skill(f.Name); got == nil || sum(got.Found) != f.Found || sum(got.SearchThenLoad) != f.LoadedAfter {
				t.Errorf("%s: found %s: %+v; the scan %+v", step, f.Name, got, f)
			}
		}
		tot := s.Total
		if sum(tot.Loads) != loads || sum(tot.Searches) != scan.Searches.Searches || sum(tot.NoMatch) != scan.Searches.NoMatch ||
			sum(tot.Errors) != skillErrs+searchErrs {
			t.Errorf("%s: totals loads %d searches %d noMatch %d errors %d; the scan %d %d %d %d", step,
				sum(tot.Loads), sum(tot.Searches), sum(tot.NoMatch), sum(tot.Errors), loads, scan.Searches.Searches, scan.Searches.NoMatch, skillErrs+searchErrs)
		}
		// Search-then-load is counted within the hour: the whole workload
		// fell in one hour unless it straddled two.
		if got := sum(tot.SearchThenLoad); got != scan.Searches.FoundThenLoaded && (step == ByDay || nonZero(tot.Loads) == 1) {
			t.Errorf("%s: search then load %d; the scan %d", step, got, scan.Searches.FoundThenLoaded)
		}
	}
}

func sumErr(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func nonZero(xs []int) int {
	n := 0
	for _, x := range xs {
		if x != 0 {
			n++
		}
	}
	return n
}

// TestSeriesPoints: hours written at known times give their points in
// place, zeros between them, releases split by revision and channel, and
// days sum their hours; a window too wide and a bad step are errors.
func TestSeriesPoints(t *testing.T) {
	srv, l := newSessionLog(t, events.LayoutFlat)
	o := l.opts()
	p, err := New(srv.JS, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kv, err := p.bucket(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	// Today 06:00 and 08:00, and yesterday 23:00 (UTC).
	day := time.Now().UTC().Truncate(24 * time.Hour)
	h6, h8, y23 := day.Add(6*time.Hour), day.Add(8*time.Hour), day.Add(-time.Hour)
	pos := p.newPosition(time.Time{})
	pos.First, pos.Seq = y23, 0
	putJSON(t, kv, posKey, pos)
	load := func(sid string, rev uint64, ch string) usage.Output {
		return usage.Output{Kind: usage.OutputLoad, Session: sid, Skill: "deploy", Rev: rev, Channel: ch}
	}
	put := func(at time.Time, outs ...usage.Output) {
		h := newHour(pos.Gen, at)
		for i, out := range outs {
			h.Apply(out, uint64(i+1), at.Add(time.Minute))
		}
		b, err := h.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, HourKey(at), b); err != nil {
			t.Fatal(err)
		}
	}
	found := &events.SearchValue{Query: "ship", Total: 1, Results: []events.Entry{{Name: "deploy"}}}
	none := &events.SearchValue{Query: "quantum"}
	put(h6,
		load("s1", 3, "stable"), load("s2", 4, "canary"), load("s3", 3, "stable"),
		usage.Output{Kind: usage.OutputSearch, Session: "s4", Search: found},
		load("s4", 3, "stable"), load("s4", 3, "stable"), // a pair is counted once
		usage.Output{Kind: usage.OutputSkillError, Session: "s2", Skill: "deploy", Code: "x", Rev: 4, Channel: "canary"})
	put(h8, usage.Output{Kind: usage.OutputSearch, Session: "s5", Search: none}, usage.Output{Kind: usage.OutputSearchError, Session: "s5", Code: "bad_request"})
	put(y23, load("s6", 3, "stable"))

	s, err := ReadSeries(ctx, srv.JS, o, ByHour, y23, h8)
	if err != nil {
		t.Fatal(err)
	}
	n := 10 // 23:00 .. 08:00
	at := func(pts map[int]int) []int {
		v := make([]int, n)
		for i, x := range pts {
			v[i] = x
		}
		return v
	}
	tot := s.Total
	for _, c := range []struct {
		what      string
		got, want []int
	}{
		{"loads", tot.Loads, at(map[int]int{0: 1, 7: 5})},
		{"searches", tot.Searches, at(map[int]int{7: 1, 9: 2})},
		{"search then load", tot.SearchThenLoad, at(map[int]int{7: 1})},
		{"no match", tot.NoMatch, at(map[int]int{9: 1})},
		{"errors", tot.Errors, at(map[int]int{7: 1, 9: 1})},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	if s.Times[0] != y23.Unix() || s.Times[n-1] != h8.Unix() {
		t.Errorf("times %v", s.Times)
	}
	d := s.Skill("deploy")
	if d == nil || len(d.Releases) != 2 {
		t.Fatalf("deploy: %+v", d)
	}
	if r := d.Releases[0]; r.Rev != 3 || r.Channel != "stable" || !slices.Equal(r.Loads, at(map[int]int{0: 1, 7: 4})) {
		t.Errorf("stable: %+v", r)
	}
	if r := d.Releases[1]; r.Rev != 4 || r.Channel != "canary" || !slices.Equal(r.Loads, at(map[int]int{7: 1})) || !slices.Equal(r.Errors, at(map[int]int{7: 1})) {
		t.Errorf("canary: %+v", r)
	}
	if !slices.Equal(d.Found, at(map[int]int{7: 1})) || !slices.Equal(d.SearchThenLoad, at(map[int]int{7: 1})) {
		t.Errorf("deploy found %v, then loaded %v", d.Found, d.SearchThenLoad)
	}

	days, err := ReadSeries(ctx, srv.JS, o, ByDay, y23, h8)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(days.Times, []int64{day.Add(-24 * time.Hour).Unix(), day.Unix()}) || !slices.Equal(days.Total.Loads, []int{1, 5}) ||
		!slices.Equal(days.Total.Searches, []int{0, 3}) || !slices.Equal(days.Total.Errors, []int{0, 2}) {
		t.Errorf("days: %v %+v", days.Times, days.Total)
	}

	if _, err := ReadSeries(ctx, srv.JS, o, ByDay, day.Add(-100*24*time.Hour), day); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("a window of 100 days: %v", err)
	}
	if _, err := ReadSeries(ctx, srv.JS, o, Step("week"), time.Time{}, time.Time{}); err == nil || !strings.Contains(err.Error(), "hour or day") {
		t.Errorf("step week: %v", err)
	}
}
