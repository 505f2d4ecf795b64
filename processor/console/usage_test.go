package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor/console"
	"github.com/skillstream/skillstream/processor/console/browsertest"
	"github.com/skillstream/skillstream/processor/usage/projection"
)

type plotSpec struct {
	Title  string  `json:"title"`
	X      []int64 `json:"x"`
	Series []struct {
		Label  string `json:"label"`
		Values []int  `json:"values"`
	} `json:"series"`
}

var plotBlock = regexp.MustCompile(`<script type="application/json" id="([a-z-]+)">(.*?)</script>`)

// get fetches path (signed in on c) and returns the status and body.
func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// plots reads a page's plot data blocks by id.
func plots(t *testing.T, body string) map[string]plotSpec {
	t.Helper()
	out := map[string]plotSpec{}
	for _, m := range plotBlock.FindAllStringSubmatch(body, -1) {
		var p plotSpec
		if err := json.Unmarshal([]byte(m[2]), &p); err != nil {
			t.Fatalf("plot %s: %v: %s", m[1], err, m[2])
		}
		out[m[1]] = p
	}
	return out
}

// wantSeries fails t where a plot's lines differ from want, by label.
func wantSeries(t *testing.T, what string, p plotSpec, times []int64, want map[string][]int) {
	t.Helper()
	if !slices.Equal(p.X, times) {
		t.Errorf("%s: x %v, want %v", what, p.X, times)
	}
	if len(p.Series) != len(want) {
		t.Errorf("%s: %d lines, want %d", what, len(p.Series), len(want))
	}
	for _, s := range p.Series {
		if w, ok := want[s.Label]; !ok || !slices.Equal(s.Values, w) {
			t.Errorf("%s: %s = %v, want %v", what, s.Label, s.Values, w)
		}
	}
}

func total(xs []int) (n int) {
	for _, x := range xs {
		n += x
	}
	return n
}

// TestUsagePage: the usage page plots, per hour and per day, the series
// the projection's reader returns (the points usage --by prints), in
// total and for a picked skill; the never-used table lists the skills
// catalogs listed and nobody used, sorted as the query asks; a bad query
// is a clear 400.
func TestUsagePage(t *testing.T) {
	f := startFleet(t, 12)
	ts := startConsole(t, console.Config{Sources: f.sources()})
	c := client(t)
	signIn(t, c, ts.URL, viewerToken)
	ctx := context.Background()
	for _, step := range []projection.Step{projection.ByHour, projection.ByDay} {
		code, body := get(t, c, ts.URL+"/usage?by="+string(step)+"&skill=deploy")
		if code != http.StatusOK {
			t.Fatalf("usage by %s: %d\n%s", step, code, body)
		}
		sr, err := projection.ReadSeries(ctx, f.srv.JS, f.usageOptions(), step, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		ps := plots(t, body)
		tt := sr.Total
		wantSeries(t, string(step)+" total", ps["plot-total"], sr.Times, map[string][]int{
			"loads": tt.Loads, "searches": tt.Searches, "search then load": tt.SearchThenLoad,
			"searches that found nothing": tt.NoMatch, "errors": tt.Errors,
		})
		// 12 sessions: 12 loads of deploy, 3 of review; 6 searches that
		// found deploy (then loaded) and 4 that found nothing; 4 calls
		// of a skill that does not exist.
		if total(tt.Loads) != 15 || total(tt.Searches) != 10 || total(tt.SearchThenLoad) != 6 || total(tt.NoMatch) != 4 || total(tt.Errors) != 4 {
			t.Errorf("by %s: totals %+v", step, tt)
		}
		d := sr.Skill("deploy")
		if d == nil {
			t.Fatalf("no series of deploy")
		}
		wantSeries(t, string(step)+" deploy", ps["plot-skill"], sr.Times, map[string][]int{
			"loads": d.Loads, "found by a search": d.Found, "loaded after a search": d.SearchThenLoad, "errors": d.Errors,
		})
		for _, want := range []string{`<div class="plot" data-plot="plot-total">`, `assets/vendor/uplot/uPlot.iife.min.js`, `assets/plot.js`} {
			if !strings.Contains(body, want) {
				t.Errorf("by %s: the page lacks %s", step, want)
			}
		}
	}
	// Loads a store's releases served (stable revision 1, canary 2): the
	// skill's plot splits them.
	for i, ch := range []string{"stable", "canary", "stable"} {
		sid := "rel-" + strconv.Itoa(i)
		b, err := events.Encode(events.JSON, events.ToolResult{V: 1, Session: sid, Call: "c1", TriggerSeq: 1, Text: "<skill_content>x</skill_content>",
			Value: &events.SkillValue{Name: "deploy", Provider: "store", Rev: uint64(1 + i%2), Channel: ch}})
		if err != nil {
			t.Fatal(err)
		}
		m := nats.NewMsg(events.Subject(events.DefaultPrefix, sid, events.KindToolResult))
		m.Data = b
		m.Header.Set(events.HeaderContentType, events.ContentTypeJSON)
		if _, err := f.srv.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	natstest.Eventually(t, 30*time.Second, "the releases plotted", func() error {
		_, body := get(t, c, ts.URL+"/usage?skill=deploy")
		p, ok := plots(t, body)["plot-skill-releases"]
		if !ok {
			return errors.New("no releases plot")
		}
		got := map[string]int{}
		for _, l := range p.Series {
			got[l.Label] = total(l.Values)
		}
		if got["loads r1 stable"] != 2 || got["loads r2 canary"] != 1 || len(got) != 4 {
			return fmt.Errorf("releases plotted %v", got)
		}
		return nil
	})
	// The never-used table, both ways; the hostile description of a used
	// skill never reaches it, and a listed one shows escaped.
	_, body := get(t, c, ts.URL+"/usage")
	if i, j := strings.Index(body, ">archive</a>"), strings.Index(body, ">idle</a>"); i < 0 || j < 0 || i > j {
		t.Errorf("sorted by name: archive at %d, idle at %d", i, j)
	}
	if strings.Contains(body, ">deploy</a></td>") || strings.Contains(body, ">review</a></td>") {
		t.Errorf("a used skill in the never-used table")
	}
	_, body = get(t, c, ts.URL+"/usage?sort=-name")
	if i, j := strings.Index(body, ">archive</a>"), strings.Index(body, ">idle</a>"); i < 0 || j < 0 || i < j {
		t.Errorf("sorted by -name: archive at %d, idle at %d", i, j)
	}
	for _, q := range []string{"by=week", "sort=size", "skill=Not%20A%20Name"} {
		if code, body := get(t, c, ts.URL+"/usage?"+q); code != http.StatusBadRequest {
			t.Errorf("usage?%s: %d\n%s", q, code, body)
		}
	}
}

// TestUsageNoProjection: without a projection the page says so, and why.
func TestUsageNoProjection(t *testing.T) {
	f := startFleet(t, 1)
	src := f.sources()
	src.UsageBucket = "NOTHERE"
	ts := startConsole(t, console.Config{Sources: src})
	c := client(t)
	signIn(t, c, ts.URL, viewerToken)
	code, body := get(t, c, ts.URL+"/usage")
	if code != http.StatusOK || !strings.Contains(body, "no usage projection") || !strings.Contains(body, "usage --rebuild") {
		t.Errorf("no projection: %d\n%s", code, body)
	}
}

// TestBrowserUsagePlot: in a real Chromium the usage page draws its plots
// with the vendored uPlot under the console's CSP, and the points drawn
// are the series the projection's reader returns.
func TestBrowserUsagePlot(t *testing.T) {
	f := startFleet(t, 6)
	ts := startConsole(t, console.Config{Sources: f.sources()})
	ctx, log := browsertest.New(t)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/login?next=/usage%3Fskill%3Ddeploy"),
		chromedp.WaitVisible(`input[name=token]`),
		chromedp.SendKeys(`input[name=token]`, viewerToken),
		chromedp.Submit(`input[name=token]`),
		chromedp.WaitVisible(`div.plot[data-plot="plot-skill"][data-drawn]`),
		chromedp.WaitVisible(`div.plot[data-plot="plot-total"][data-drawn]`),
	); err != nil {
		t.Fatalf("%v (page errors %v, console %v)", err, log.Errors(), log.Lines())
	}
	sr, err := projection.ReadSeries(context.Background(), f.srv.JS, f.usageOptions(), projection.ByHour, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	// What uPlot holds: [x, line 1, line 2, ...].
	drawn, err := chromedp.Run(ctx, chromedp.Evaluate[[][]float64](`window.skillstreamPlots["plot-total"].data`))
	if err != nil {
		t.Fatal(err)
	}
	tt := sr.Total
	want := [][]int{tt.Loads, tt.Searches, tt.SearchThenLoad, tt.NoMatch, tt.Errors}
	if len(drawn) != 1+len(want) {
		t.Fatalf("drawn %d arrays", len(drawn))
	}
	for i, x := range sr.Times {
		if drawn[0][i] != float64(x) {
			t.Errorf("x[%d] drawn %v, want %d", i, drawn[0][i], x)
		}
	}
	for k, w := range want {
		for i, v := range w {
			if drawn[k+1][i] != float64(v) {
				t.Errorf("line %d point %d drawn %v, want %d", k, i, drawn[k+1][i], v)
			}
		}
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('div.plot[data-plot="plot-total"]').dataset.drawn`))
	if err != nil || n != "48" {
		t.Errorf("data-drawn %q (%v), want 48", n, err)
	}
	canvas, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("div.plot canvas").length`))
	if err != nil || canvas < 2 {
		t.Errorf("%d canvases drawn (%v)", canvas, err)
	}
	if errs := log.Errors(); len(errs) > 0 {
		t.Errorf("page errors: %v", errs)
	}
	for _, l := range log.Lines() {
		if strings.Contains(l, "Content Security Policy") || strings.HasPrefix(l, "error") {
			t.Errorf("console: %s", l)
		}
	}
}
