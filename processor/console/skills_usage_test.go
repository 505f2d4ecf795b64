package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor/usage/projection"
)

// publishLoad records a load of name in session sid (a skill call and
// its result), or a failed call with code when code is set.
func publishLoad(t *testing.T, e *skillEnv, sid, call, name, code string) {
	t.Helper()
	ctx := context.Background()
	pub := func(kind events.Kind, v any) uint64 {
		b, err := events.Encode(events.JSON, v)
		if err != nil {
			t.Fatal(err)
		}
		m := nats.NewMsg(events.Subject("ev", sid, kind))
		m.Data = b
		m.Header.Set(events.HeaderContentType, events.JSON.ContentType())
		ack, err := e.js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	seq := pub(events.KindSkillCall, events.SkillCall{V: 1, Session: sid, Call: call, Args: events.SkillArgs{Name: name}})
	res := events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: seq, Text: "<skill_content>body</skill_content>",
		Value: &events.SkillValue{Name: name, Provider: "store"}}
	if code != "" {
		res = events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: seq, IsError: true, Text: "Error: no", Error: &events.ErrorInfo{Code: code, Message: "no"}}
	}
	pub(events.KindToolResult, res)
}

// TestSkillsUsage: with the usage projection, the skills page shows each
// skill's loads of the last 7 days and its last use, and the skill page
// carries its usage by the hour as the plot's JSON data block, whose
// points sum to the projection's counts.
func TestSkillsUsage(t *testing.T) {
	srv := natstest.Start(t)
	e := newSkillEnv(t, srv.JS, nil)
	publishLoad(t, e, "s1", "c1", "report", "")
	publishLoad(t, e, "s2", "c2", "report", "")
	publishLoad(t, e, "s1", "c3", "report", "")
	publishLoad(t, e, "s2", "c4", "report", events.CodeProvider)
	opts := projection.Options{Stream: "SESSIONS", Prefix: "ev", FlushWait: 50 * time.Millisecond, LeaseTTL: time.Second}
	p, err := projection.New(srv.JS, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	natstest.Eventually(t, 30*time.Second, "the projection counts the loads", func() error {
		r, err := projection.Read(context.Background(), srv.JS, opts, time.Time{})
		if err != nil {
			return err
		}
		if r.Projection.LagRecords != 0 {
			return fmt.Errorf("%d records behind", r.Projection.LagRecords)
		}
		for _, s := range r.Skills {
			if s.Name == "report" && s.Loads == 3 {
				return nil
			}
		}
		return fmt.Errorf("report's loads not counted yet: %+v", r.Skills)
	})
	cfg := e.cfg
	cfg.Sources.UsageBucket = projection.DefaultBucket
	ts := startConsole(t, cfg)
	c := client(t)
	signIn(t, c, ts.URL, viewerToken)
	_, body := fetchPage(t, c, ts.URL+"/skills")
	if strings.Contains(body, "no usage projection") {
		t.Error("the page says there is no projection")
	}
	report := rowOf(body, "report")
	if !strings.Contains(report, `<td class="num loads">3</td>`) || strings.Contains(report, `<td class="last">never</td>`) {
		t.Errorf("report's usage:\n%s", report)
	}
	if draftie := rowOf(body, "draftie"); !strings.Contains(draftie, `<td class="num loads">0</td>`) || !strings.Contains(draftie, `<td class="last">never</td>`) {
		t.Errorf("draftie's usage:\n%s", draftie)
	}

	_, body = fetchPage(t, c, ts.URL+"/skills/report?in=global")
	if !strings.Contains(body, `<div class="plot" data-plot="plot-usage"></div>`) {
		t.Fatalf("no plot on the skill page:\n%s", body)
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="plot-usage">(.*?)</script>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no plot data block")
	}
	var pd struct {
		Title  string  `json:"title"`
		X      []int64 `json:"x"`
		Series []struct {
			Label  string `json:"label"`
			Values []int  `json:"values"`
		} `json:"series"`
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &pd); err != nil {
		t.Fatalf("plot data %q: %v", m[1], err)
	}
	if len(pd.X) != 7*24 || len(pd.Series) != 2 || pd.Series[0].Label != "loads" || pd.Series[1].Label != "errors" {
		t.Fatalf("plot data: %d points, series %+v", len(pd.X), pd.Series)
	}
	sum := func(v []int) (n int) {
		for _, x := range v {
			n += x
		}
		return n
	}
	if l, e := sum(pd.Series[0].Values), sum(pd.Series[1].Values); l != 3 || e != 1 {
		t.Errorf("the plot holds %d loads and %d errors, want 3 and 1", l, e)
	}
	if now := time.Now().UTC().Truncate(time.Hour).Unix(); pd.X[len(pd.X)-1] != now || pd.X[1]-pd.X[0] != 3600 {
		t.Errorf("the plot's hours end at %d, want %d, by 3600 s", pd.X[len(pd.X)-1], now)
	}
}
