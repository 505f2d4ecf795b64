package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/processor/console"
	"github.com/skillstream/skillstream/processor/console/browsertest"
)

// hostileDescription is a skill description an attacker wrote: markup, an
// event handler and a script link, each of which would set window.pwned.
const hostileDescription = `Summarise <script>window.pwned=1</script> "><img src=x onerror="window.pwned=2"> <a href="javascript:window.pwned=3">docs</a>`

// TestConsoleTour: a new user's console, end to end. serve runs with its
// defaults (the usage projection on) and a store; a worker's live session
// steps, loads and searches; `skillstream console` serves the pages; a
// real Chromium signs in as the operator and walks every page:
//   - the skills page lists every skill, the hostile description shown as
//     text and nothing of it run;
//   - the skill page's roll back shows the live sessions on its
//     confirmation, and once confirmed the live session's next pre-step
//     carries the earlier revision;
//   - the usage page's plotted points equal `usage --by hour --json`;
//   - the session's timeline and the exact text it was shown (the hostile
//     description escaped) and the fleet page render.
//
// With SKILLSTREAM_CONSOLE_SCREENSHOTS=DIR it writes a PNG of each page to
// DIR (the manual's pictures: cmd/skillstream/docs/console).
func TestConsoleTour(t *testing.T) {
	t.Setenv(console.EnvViewerToken, "viewer-token-for-the-tour")
	t.Setenv(console.EnvOperatorToken, "operator-token-for-the-tour")
	root := t.TempDir()
	writeFile(t, root, "deploy/SKILL.md", skillMD("Run scripts/deploy.sh.", "name: deploy", "description: Deploy the app to staging or production."))
	srv := startServe(t, t.TempDir(), root, "--skill-search", "--catalog-listed-max", "10", "--usage-projection")
	natsAddr := strings.TrimPrefix(srv.url, "nats://")
	var storeRev uint64
	push := func(name, desc string) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), name)
		writeFile(t, dir, "SKILL.md", skillMD("Follow the steps.", "name: "+name, "description: "+desc))
		code, out, stderr := runMain(t, "skills", "push", dir, "--nats-url", srv.url)
		m := regexp.MustCompile(`(?m)^store revision (\d+) `).FindStringSubmatch(out)
		if code != exitOK || m == nil {
			t.Fatalf("push %s: exit %d\n%s%s", name, code, out, stderr)
		}
		storeRev, _ = strconv.ParseUint(m[1], 10, 64)
	}
	push("release-notes", "Write release notes from the merged pull requests.")
	push("release-notes", "Write release notes, grouped by area, from the merged pull requests.")
	push("summarise", hostileDescription)

	// A live session: a step, a load and a search.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	w, err := client.Connect(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Read your writes: the first step waits for the member to hold the
	// last push.
	w.RequireStoreRevision(storeRev)
	session := "tour-" + randomToken(t)
	tools := []events.Tool{client.SkillTool("skillstream")}
	d, err := w.PreStep(ctx, events.PreStep{Session: session, Step: "1", Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if d.Catalog == nil || !strings.Contains(d.Catalog.Text, "grouped by area") || !strings.Contains(d.Catalog.Text, "summarise") {
		t.Fatalf("the first catalog does not list release-notes rev 2 and summarise: %+v", d.Catalog)
	}
	if _, err := w.CallSkill(ctx, events.SkillCall{Session: session, Call: "c1", Args: events.SkillArgs{Name: "release-notes"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.SearchSkills(ctx, events.SkillSearch{Session: session, Call: "s1", Args: events.SearchArgs{Query: "deploy staging"}}); err != nil {
		t.Fatal(err)
	}

	base, _, errs := runConsoleCmd(t, "--listen", natsAddr, "--console-listen", "127.0.0.1:0",
		"--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--skill-search", "--catalog-listed-max", "10")
	bctx, log := browsertest.New(t)
	bctx, bcancel := context.WithTimeout(bctx, 90*time.Second)
	defer bcancel()
	shots := os.Getenv("SKILLSTREAM_CONSOLE_SCREENSHOTS")
	shot := func(name string) {
		t.Helper()
		if shots == "" {
			return
		}
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pwned := func(where string) {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](`String(window.pwned)`))
		if err != nil || v != "undefined" {
			t.Errorf("%s: window.pwned is %q (%v): the hostile description ran", where, v, err)
		}
	}

	// Sign in as the operator, on the skills page.
	if err := chromedp.Do(bctx,
		chromedp.Navigate(base+"skills"),
		chromedp.WaitVisible(`input[name=token]`),
		chromedp.SendKeys(`input[name=token]`, "operator-token-for-the-tour"),
		chromedp.Submit(`input[name=token]`),
		chromedp.WaitVisible(`header .role`),
	); err != nil {
		t.Fatalf("sign in: %v\n%s", err, errs)
	}
	page, err := chromedp.Run(bctx, chromedp.Text(`main`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"deploy", "release-notes", "summarise", `<script>window.pwned=1</script>`, `onerror="window.pwned=2"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the skills page does not show %q:\n%s", want, page)
		}
	}
	pwned("skills page")
	shot("skills")

	// The skill page, then roll back through the confirmation.
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"skills/release-notes?in=global"), chromedp.WaitVisible(`#act-rollback`)); err != nil {
		t.Fatalf("skill page: %v", err)
	}
	shot("skill")
	if err := chromedp.Do(bctx, chromedp.Click(`#act-rollback`), chromedp.WaitVisible(`#confirm`)); err != nil {
		t.Fatalf("rollback confirmation: %v", err)
	}
	reach, err := chromedp.Run(bctx, chromedp.Text(`.blast .reach`))
	if err != nil || !strings.HasPrefix(reach, "1 live session") {
		t.Errorf("the confirmation's blast radius is %q (%v), want the 1 live session", reach, err)
	}
	shot("confirm")
	if err := chromedp.Do(bctx, chromedp.Click(`#confirm`), chromedp.WaitVisible(`main h1`)); err != nil {
		t.Fatalf("confirm the rollback: %v", err)
	}
	// The live session's next step carries the earlier revision (once the
	// member's store watch has the write: a few milliseconds).
	step := 1
	eventually(t, 30*time.Second, "the live session's next pre-step carries the rollback", func() error {
		step++
		d, err := w.PreStep(ctx, events.PreStep{Session: session, Step: strconv.Itoa(step), Tools: tools})
		if err != nil {
			return err
		}
		if d.Catalog == nil || strings.Contains(d.Catalog.Text, "grouped by area") || !strings.Contains(d.Catalog.Text, "Write release notes from the merged") {
			return errorf("catalog %+v", d.Catalog)
		}
		return nil
	})

	// Usage: the plotted points are usage --by hour --json's.
	var series struct {
		Times []int64 `json:"times"`
		Total struct {
			Loads    []int `json:"loads"`
			Searches []int `json:"searches"`
		} `json:"total"`
	}
	eventually(t, 30*time.Second, "the usage projection counts the load and the search", func() error {
		code, out, stderr := runMain(t, "usage", "--by", "hour", "--json", "--nats-url", srv.url)
		if code != exitOK {
			return errorf("usage: exit %d %s", code, stderr)
		}
		if err := json.Unmarshal([]byte(out), &series); err != nil {
			return err
		}
		if sum(series.Total.Loads) < 1 || sum(series.Total.Searches) < 1 {
			return errorf("loads %v searches %v", series.Total.Loads, series.Total.Searches)
		}
		return nil
	})
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"usage"), chromedp.WaitVisible(`div.plot[data-drawn]`)); err != nil {
		t.Fatalf("usage page: %v", err)
	}
	var drawn struct {
		X        []int64 `json:"x"`
		Loads    []int   `json:"loads"`
		Searches []int   `json:"searches"`
	}
	js := `(function(){var u=window.skillstreamPlots["plot-total"]; return JSON.stringify({x:u.data[0], loads:u.data[1], searches:u.data[2]});})()`
	raw, err := chromedp.Run(bctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(raw), &drawn); err != nil {
		t.Fatal(err)
	}
	// The page read its series a moment after the command: compare the
	// hours both cover.
	if !slices.Equal(drawn.X, series.Times) || !slices.Equal(drawn.Loads, series.Total.Loads) || !slices.Equal(drawn.Searches, series.Total.Searches) {
		t.Errorf("the usage plot's points differ from usage --by hour --json:\nplot  %v %v %v\nusage %v %v %v",
			drawn.X, drawn.Loads, drawn.Searches, series.Times, series.Total.Loads, series.Total.Searches)
	}
	shot("usage")

	// The session: its timeline, and the exact text of its first step.
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"sessions/"+session), chromedp.WaitVisible(`main h1`)); err != nil {
		t.Fatalf("session page: %v", err)
	}
	timeline, err := chromedp.Run(bctx, chromedp.Text(`main`))
	if err != nil || !strings.Contains(timeline, "release-notes") {
		t.Errorf("the session's timeline: %q (%v)", timeline, err)
	}
	shot("session")
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"sessions/"+session+"?step=1"), chromedp.WaitVisible(`main pre`)); err != nil {
		t.Fatalf("step text: %v", err)
	}
	text, err := chromedp.Run(bctx, chromedp.Text(`main pre`))
	// The catalog text escapes markup itself; the page shows that exact
	// text, character for character.
	if err != nil || !strings.Contains(text, `Summarise &lt;script&gt;window.pwned=1&lt;/script&gt;`) {
		t.Errorf("the text shown at step 1 is not the catalog exactly as the model saw it: %q (%v)", text, err)
	}
	pwned("session step page")

	if err := chromedp.Do(bctx, chromedp.Navigate(base+"fleet"), chromedp.WaitVisible(`#fleet-summary`)); err != nil {
		t.Fatalf("fleet page: %v", err)
	}
	shot("fleet")
	if e := log.Errors(); len(e) > 0 {
		t.Errorf("page errors: %v", e)
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
