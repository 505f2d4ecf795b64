package console_test

import (
	"bytes"
	"context"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/console"
	"github.com/skillstream/skillstream/processor/replay"
)

// TestSessionPages: the sessions page lists the recent sessions and finds
// one by id; a session's timeline shows each step's catalog and changes,
// its searches and loads; a step shows the exact catalog text the model
// saw (escaped: a skill's description is hostile) and the outputs of its
// triggers; the export is the recording skillstream export writes; the
// replay against today's skills says what would differ once a skill
// changed. Session ids in the URL are checked.
func TestSessionPages(t *testing.T) {
	f := startFleet(t, 4)
	now := time.Now()
	ts := startConsole(t, console.Config{Sources: f.sources(), Now: func() time.Time { return now }})
	c := client(t)
	signIn(t, c, ts.URL, viewerToken)

	code, body := get(t, c, ts.URL+"/sessions")
	if code != http.StatusOK {
		t.Fatalf("sessions: %d\n%s", code, body)
	}
	for _, sid := range f.sessions {
		if !strings.Contains(body, `href="/sessions/`+sid+`">`+sid+`</a>`) {
			t.Errorf("recent sessions lack %s", sid)
		}
	}
	if i, j := strings.Index(body, ">sess-3<"), strings.Index(body, ">sess-0<"); i > j {
		t.Errorf("not the most recent first: sess-3 at %d, sess-0 at %d", i, j)
	}
	res, err := c.Get(ts.URL + "/sessions?id=sess-2")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/sessions/sess-2" {
		t.Errorf("find sess-2: %s %s", res.Status, res.Header.Get("Location"))
	}

	// The timeline of sess-0: a search that found deploy, its load, a
	// search that found nothing, a call of no skill, a load of review.
	code, body = get(t, c, ts.URL+"/sessions/sess-0")
	if code != http.StatusOK {
		t.Fatalf("timeline: %d\n%s", code, body)
	}
	for _, want := range []string{
		`href="/sessions/sess-0?step=1"`, `href="/sessions/sess-0?step=2"`,
		`added: <span class="name">archive</span>, <span class="name">deploy</span>`,
		`search “deploy”: showed 1 of 1: deploy`, `load deploy (call <span class="mono">c1</span>): ok`,
		`search “quantum chromodynamics”: found nothing`, `load nope (call <span class="mono">c2</span>): error`,
		`load review (call <span class="mono">c3</span>): ok`, `, no change`,
		`href="/sessions/sess-0/export"`, `href="/sessions/sess-0/replay"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("timeline lacks %s\n%s", want, body)
		}
	}

	// Step 1: the exact text the model saw, as history reads it.
	var seen *replay.CatalogView
	_, err = replay.Live(context.Background(), f.srv.JS, processor.DefaultStream, events.DefaultPrefix, "sess-0", replay.Options{
		ToolOwner: processor.DefaultToolOwner, HistoryOnly: true, Emit: func(s replay.Step) error {
			if s.Kind == replay.TriggerPreStep && s.ID == "1" {
				seen = s.Seen
			}
			return nil
		}})
	if err != nil || seen == nil || !strings.Contains(seen.Text, "onerror") {
		t.Fatalf("history of sess-0: %v, seen %+v", err, seen)
	}
	code, body = get(t, c, ts.URL+"/sessions/sess-0?step=1")
	if code != http.StatusOK || !strings.Contains(body, `<pre class="model-text catalog-text">`+html.EscapeString(seen.Text)+`</pre>`) {
		t.Errorf("step 1: %d; the exact catalog text escaped is not on the page\n%s", code, body)
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
		t.Errorf("a skill's description reached the page unescaped")
	}
	if !strings.Contains(body, `<strong>skill-search</strong> <span class="mono">s1</span> query “deploy”: ok`) ||
		!strings.Contains(body, `<strong>skill-call</strong> <span class="mono">c1</span> skill deploy: ok`) {
		t.Errorf("step 1 lacks its search's output\n%s", body)
	}
	if code, body = get(t, c, ts.URL+"/sessions/sess-0?step=nope"); code != http.StatusNotFound || !strings.Contains(body, "not in session sess-0") {
		t.Errorf("step nope: %d", code)
	}

	// The export: the same recording as skillstream export's.
	res, err = c.Get(ts.URL + "/sessions/sess-1/export")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	got.ReadFrom(res.Body)
	res.Body.Close()
	var want bytes.Buffer
	if _, err := replay.Export(context.Background(), f.srv.JS, replay.ExportOptions{Stream: processor.DefaultStream, Prefix: events.DefaultPrefix,
		Layout: events.LayoutFlat, Session: "sess-1", Now: now}, &want); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Disposition") != `attachment; filename="sess-1.jsonl"` || !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("export: %s %q, %d bytes, want %d equal", res.Status, res.Header.Get("Content-Disposition"), got.Len(), want.Len())
	}
	if err := replay.Verify(bytes.NewReader(got.Bytes())); err != nil {
		t.Errorf("the export does not verify: %v", err)
	}

	// The replay: today's skills are the recorded ones, then deploy
	// changes and the replay shows the difference.
	code, body = get(t, c, ts.URL+"/sessions/sess-0/replay")
	if code != http.StatusOK || !strings.Contains(body, `<span class="ok">0 different</span>`) {
		t.Errorf("replay unchanged: %d\n%s", code, body)
	}
	skill := filepath.Join(f.cwd, ".agents", "skills", "deploy", "SKILL.md")
	if err := os.WriteFile(skill, []byte("---\nname: deploy\ndescription: Ships the service, now with canaries.\n---\nDo it.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 30*time.Second, "the replay shows the change", func() error {
		_, body = get(t, c, ts.URL+"/sessions/sess-0/replay")
		if !strings.Contains(body, `<span class="warn">differs</span>`) || !strings.Contains(body, "&#43;- `deploy`: Ships the service, now with canaries.") {
			return errString("no difference shown yet")
		}
		return nil
	})
	if !strings.Contains(body, `<pre class="diff">`) {
		t.Errorf("replay: no diff shown\n%s", body)
	}

	// Hostile ids.
	for _, path := range []string{"/sessions/a.b", "/sessions/" + strings.Repeat("x", 200), "/sessions/%3Cscript%3E", "/sessions/a%20b/export", "/sessions?id=..%2Fx"} {
		if code, _ := get(t, c, ts.URL+path); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", path, code)
		}
	}
	if code, body := get(t, c, ts.URL+"/sessions/never-was"); code != http.StatusNotFound || !strings.Contains(body, "no events") {
		t.Errorf("a session that never was: %d", code)
	}
	// A session longer than the pages read is refused, saying what reads
	// it whole; its export still downloads.
	defer console.SetMaxSessionEvents(5)()
	for _, path := range []string{"/sessions/sess-0", "/sessions/sess-0/replay"} {
		if code, body := get(t, c, ts.URL+path); code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "skillstream history --session sess-0") {
			t.Errorf("%s of a long session: %d", path, code)
		}
	}
	if code, _ := get(t, c, ts.URL+"/sessions/sess-0/export"); code != http.StatusOK {
		t.Errorf("export of a long session: %d", code)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
