package console_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor/console"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/store"
)

// hostileDesc is a description a skill's author controls: markup that would
// run script (set window.pwned, open a dialog) if it reached a page
// unescaped, and a javascript: link.
const hostileDesc = `Hostile <script>window.pwned=1;alert(1)</script> "><img src=x onerror="window.pwned=2;alert(2)"> <a href="javascript:window.pwned=3">click</a> [link](javascript:window.pwned=4)`

// skillEnv is a console over a real skill store, library, folder and
// sessions stream in an in-process NATS server.
type skillEnv struct {
	ts      struct{ URL string }
	js      jetstream.JetStream
	pb, lib *store.Publisher
	reg     *providers.Registry
	trusted string // the trusted publisher's key
	cfg     console.Config
	mu      sync.Mutex
	actions []console.Action
}

func httptestServer(t *testing.T, h http.Handler) string {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func (e *skillEnv) Actions() []console.Action {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]console.Action(nil), e.actions...)
}

// writeSkill writes a skill folder <root>/<name> and returns its path.
func writeSkill(t *testing.T, root, name, desc, body string, extra map[string]string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	md := fmt.Sprintf("---\nname: %s\ndescription: %q\n---\n%s\n", name, desc, body)
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, data := range extra {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func pushDir(t *testing.T, pb *store.Publisher, dir string, opts store.PushOptions) {
	t.Helper()
	l, err := store.ReadSkill(dir, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pb.PushWith(context.Background(), skillstore.Global, []store.Local{l}, opts); err != nil {
		t.Fatalf("push %s: %v", dir, err)
	}
}

// newSkillEnv fills the store of js: report (two revisions, the second
// adding a file), draftie (a draft release), signed (signed by a
// publisher's key), evil (a hostile description and body); the library:
// libskill; a folder: localskill; and the sessions stream: two live
// sessions and one whose last pre-step is old. auditConn, when set, is
// the console's audit connection.
func newSkillEnv(t *testing.T, js jetstream.JetStream, auditConn *nats.Conn) *skillEnv {
	t.Helper()
	ctx := context.Background()
	e := &skillEnv{js: js}
	var err error
	if e.pb, err = store.NewPublisher(ctx, js, store.Config{}); err != nil {
		t.Fatal(err)
	}
	libCfg := store.Config{Library: true, Bucket: "LIBRARY", Objects: "LIBRARY_FILES"}
	if e.lib, err = store.NewPublisher(ctx, js, libCfg); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	report := writeSkill(t, root, "report", "Writes the weekly report.", "Step one.\nStep two.\nStep three.", nil)
	pushDir(t, e.pb, report, store.PushOptions{})
	writeSkill(t, root, "report", "Writes the weekly report.", "Step one.\nStep 2, changed.\nStep three.", map[string]string{"extra.md": "more\n"})
	pushDir(t, e.pb, report, store.PushOptions{})
	draftie := writeSkill(t, root, "draftie", "A skill with a draft.", "First.", nil)
	pushDir(t, e.pb, draftie, store.PushOptions{})
	writeSkill(t, root, "draftie", "A skill with a draft.", "Second.", nil)
	pushDir(t, e.pb, draftie, store.PushOptions{Draft: true, By: "test"})
	kp, err := nkeys.CreatePair(skillstore.KeyPrefix)
	if err != nil {
		t.Fatal(err)
	}
	pushDir(t, e.pb, writeSkill(t, root, "trusty", "Signed by a trusted key.", "Trusted body.", nil), store.PushOptions{Sign: kp})
	other, err := nkeys.CreatePair(skillstore.KeyPrefix)
	if err != nil {
		t.Fatal(err)
	}
	pushDir(t, e.pb, writeSkill(t, root, "signed", "Signed by a key not trusted.", "Signed body.", nil), store.PushOptions{Sign: other})
	pushDir(t, e.pb, writeSkill(t, root, "gone", "A revoked revision.", "Revoked body.", nil), store.PushOptions{})
	gone, err := e.pb.Get(ctx, skillstore.Global, "gone", store.At{})
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	e.trusted = pub
	if _, _, err := e.pb.ChangePolicy(ctx, func(p *store.TrustPolicy) error {
		p.Require, p.Keys = store.RequireWarn, []string{pub}
		p.Revoked = &store.Revoked{Digests: []string{gone.Record.Digest}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pushDir(t, e.pb, writeSkill(t, root, "evil", hostileDesc, "Body "+hostileDesc, nil), store.PushOptions{})
	alpha, err := skillstore.Project("alpha")
	if err != nil {
		t.Fatal(err)
	}
	l, err := store.ReadSkill(writeSkill(t, t.TempDir(), "projonly", "A project's own skill.", "Project body.", nil), store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.pb.Push(ctx, alpha, []store.Local{l}, false); err != nil {
		t.Fatal(err)
	}
	libRoot := t.TempDir()
	pushDir(t, e.lib, writeSkill(t, libRoot, "libskill", "A library skill.", "Shared.", nil), store.PushOptions{})
	folder := t.TempDir()
	writeSkill(t, folder, "localskill", "A folder skill.", "Local body, forty bytes of text in all!", nil)

	// The registry of what sessions are offered: the store, the library
	// and the folder.
	sp, err := store.Open(ctx, js, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	lp, err := store.Open(ctx, js, libCfg)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := agentskills.New(agentskills.Config{CustomDirs: []string{folder}, NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	e.reg = providers.NewRegistry([]providers.Provider{sp, lp, fp})
	t.Cleanup(func() { e.reg.Close() })

	// The sessions stream: s1 and s2 are live, old was live an hour ago.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SESSIONS", Subjects: []string{"ev.>"}}); err != nil {
		t.Fatal(err)
	}
	for _, sid := range []string{"s1", "s2", "s1"} {
		if _, err := js.Publish(ctx, events.Subject("ev", sid, events.KindPreStep), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	// Not a pre-step: never counted.
	if _, err := js.Publish(ctx, events.Subject("ev", "s3", events.KindSkillCall), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}

	cfg := console.Config{Tenant: "acme", Sources: console.Sources{
		JS: js, Store: e.pb, Library: e.lib, Registry: e.reg, Stream: "SESSIONS", Layout: events.LayoutFlat, AuditConn: auditConn,
	}, Audit: func(a console.Action) {
		e.mu.Lock()
		e.actions = append(e.actions, a)
		e.mu.Unlock()
	}}
	e.cfg = cfg
	ts := startConsole(t, cfg)
	e.ts.URL = ts.URL
	return e
}

// fetchPage fetches u as c and returns the status and body.
func fetchPage(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// post sends form to u from the console's origin.
func post(t *testing.T, c *http.Client, origin, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token on the page")
	}
	return html.UnescapeString(m[1])
}

// rowOf is the skills page's row of name (its HTML), "" when absent.
func rowOf(body, name string) string {
	i := strings.Index(body, `data-name="`+name+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(body[i:], "</tr>")
	return body[i : i+j]
}

// TestSkillsPage: every skill of the store, the library and the folder
// is listed with its source, revision, release state, signature state,
// size and estimated tokens; the filters and the search keep what they
// name; hostileDesc text is escaped; a bad filter is a clear 400.
func TestSkillsPage(t *testing.T) {
	srv := natstest.Start(t)
	e := newSkillEnv(t, srv.JS, nil)
	c := client(t)
	signIn(t, c, e.ts.URL, viewerToken)
	status, body := fetchPage(t, c, e.ts.URL+"/skills")
	if status != http.StatusOK {
		t.Fatalf("skills: %d\n%s", status, body)
	}
	ctx := context.Background()
	cur, err := e.pb.Get(ctx, skillstore.Global, "report", store.At{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"report":     {`store <span class="muted">global</span>`, `<td class="num">2</td>`, `>stable<`, `>unsigned<`, fmt.Sprintf(`size">%d<`, cur.Record.Size), fmt.Sprintf(`tokens">%d<`, cur.Record.Size/4)},
		"draftie":    {`>draft<`},
		"trusty":     {`chip trusted">trusted<`, `title="` + e.trusted + `"`},
		"signed":     {`chip untrusted">untrusted<`, "not trusted"},
		"gone":       {`chip revoked">revoked<`},
		"evil":       {"&lt;script&gt;window.pwned=1"},
		"libskill":   {`<td class="source">library`},
		"projonly":   {`store <span class="muted">project/alpha</span>`, `href="/skills/projonly?in=project%2falpha"`},
		"localskill": {`<td class="source">folder <span class="muted">custom</span>`},
	} {
		row := rowOf(body, name)
		if row == "" {
			t.Errorf("%s is not listed", name)
			continue
		}
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("%s's row lacks %q:\n%s", name, w, row)
			}
		}
	}
	if strings.Contains(body, "<script>window.pwned") || strings.Contains(body, `<img src=x`) {
		t.Error("the hostileDesc description reached the page unescaped")
	}
	if !strings.Contains(body, "no usage projection is configured") {
		t.Error("the page does not say the usage columns are empty and why")
	}
	for q, want := range map[string][]string{
		"source=library":        {"libskill"},
		"source=folder":         {"localskill"},
		"state=draft":           {"draftie"},
		"q=WEEKLY":              {"report"},
		"source=store&q=signed": {"signed", "trusty"},
	} {
		status, body := fetchPage(t, c, e.ts.URL+"/skills?"+q)
		if status != http.StatusOK {
			t.Fatalf("%s: %d", q, status)
		}
		var got []string
		for _, m := range regexp.MustCompile(`data-name="([^"]+)"`).FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s lists %v, want %v", q, got, want)
		}
	}
	if status, body := fetchPage(t, c, e.ts.URL+"/skills?source=%3Cb%3E"); status != http.StatusBadRequest || !strings.Contains(body, "want store, library or folder") || strings.Contains(body, "<b>") {
		t.Errorf("a bad source filter: %d %s", status, body)
	}
}

// TestSkillPageAndDiff: a skill's page lists its revisions newest first,
// says who wrote them is not audited without a trail, and the diff of
// two revisions shows both sides of the changed line and the file added.
func TestSkillPageAndDiff(t *testing.T) {
	srv := natstest.Start(t)
	e := newSkillEnv(t, srv.JS, nil)
	c := client(t)
	signIn(t, c, e.ts.URL, viewerToken)
	status, body := fetchPage(t, c, e.ts.URL+"/skills/report?in=global")
	if status != http.StatusOK {
		t.Fatalf("skill page: %d\n%s", status, body)
	}
	i2, i1 := strings.Index(body, `data-rev="2"`), strings.Index(body, `data-rev="1"`)
	if i2 < 0 || i1 < 0 || i2 > i1 {
		t.Errorf("revisions not listed newest first (rev 2 at %d, rev 1 at %d)", i2, i1)
	}
	if !strings.Contains(body, "reads no audit trail") {
		t.Error("the page does not say why who pushed is not shown")
	}
	if strings.Contains(body, "roll back to") {
		t.Error("a viewer is offered an action")
	}
	status, body = fetchPage(t, c, e.ts.URL+"/skills/report/diff?in=global&a=1&b=2")
	if status != http.StatusOK {
		t.Fatalf("diff: %d\n%s", status, body)
	}
	for _, w := range []string{`<td class="mono left del">Step two.</td>`, `<td class="mono right add">Step 2, changed.</td>`, `>added</span> <span class="mono">extra.md`, `<td class="mono right add">more</td>`} {
		if !strings.Contains(body, w) {
			t.Errorf("the diff lacks %q", w)
		}
	}
	// The hostileDesc body is escaped in the diff too.
	if status, body = fetchPage(t, c, e.ts.URL+"/skills/evil/diff?in=global&a=1&b=1"); status != http.StatusOK || !strings.Contains(body, "No file differs") {
		t.Errorf("diff of a revision with itself: %d", status)
	}
	for path, want := range map[string]int{
		"/skills/report/diff?in=global&a=9&b=1": http.StatusNotFound,
		"/skills/report/diff?in=global&a=x":     http.StatusBadRequest,
		"/skills/nope?in=global":                http.StatusNotFound,
		"/skills/report?in=elsewhere":           http.StatusBadRequest,
		"/skills/BAD%20NAME":                    http.StatusBadRequest,
		"/skills/localskill?in=folder":          http.StatusOK,
		"/skills/libskill?in=library":           http.StatusOK,
		"/skills/projonly?in=project/alpha":     http.StatusOK,
		"/skills/projonly?in=global":            http.StatusNotFound,
	} {
		if status, body := fetchPage(t, c, e.ts.URL+path); status != want {
			t.Errorf("%s: %d, want %d\n%s", path, status, want, body)
		}
	}
}

// TestSkillActions: a viewer gets 403 on every action, GET and POST; an
// operator's confirmation shows the live sessions; a POST without the
// CSRF token is refused and changes nothing; each action with it does
// what the skills command does, and is audited.
func TestSkillActions(t *testing.T) {
	srv := natstest.Start(t)
	e := newSkillEnv(t, srv.JS, nil)
	ctx := context.Background()
	viewer := client(t)
	signIn(t, viewer, e.ts.URL, viewerToken)
	_, vbody := fetchPage(t, viewer, e.ts.URL+"/skills")
	vcsrf := csrfOf(t, vbody)
	acts := []struct {
		path string
		form url.Values
	}{
		{"/skills/report/rollback", url.Values{"in": {"global"}, "rev": {"1"}}},
		{"/skills/draftie/release", url.Values{"in": {"global"}, "rev": {"2"}, "share": {"50%"}}},
		{"/skills/draftie/promote", url.Values{"in": {"global"}}},
		{"/skills/report/pin", url.Values{"in": {"global"}, "rev": {"1"}}},
		{"/skills/report/unpin", url.Values{"in": {"global"}}},
	}
	for _, a := range acts {
		if status, _ := fetchPage(t, viewer, e.ts.URL+a.path+"?"+a.form.Encode()); status != http.StatusForbidden {
			t.Errorf("viewer GET %s: %d, want 403", a.path, status)
		}
		f := url.Values{"csrf": {vcsrf}}
		for k, v := range a.form {
			f[k] = v
		}
		if res, _ := post(t, viewer, e.ts.URL, e.ts.URL+a.path, f); res.StatusCode != http.StatusForbidden {
			t.Errorf("viewer POST %s: %s, want 403", a.path, res.Status)
		}
	}
	if len(e.Actions()) != 0 {
		t.Fatalf("a viewer acted: %v", e.Actions())
	}

	op := client(t)
	signIn(t, op, e.ts.URL, operatorToken)
	// The buttons a skill's state allows.
	for path, want := range map[string][]string{
		"/skills/report?in=global":  {`id="act-rollback"`, `class="rollback" href="/skills/report/rollback?in=global&amp;rev=1"`, `class="pin" href="/skills/report/pin?in=global&amp;rev=2"`},
		"/skills/draftie?in=global": {`id="act-release"`, `id="act-end"`},
	} {
		_, body := fetchPage(t, op, e.ts.URL+path)
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %s", path, w)
			}
		}
	}
	if _, body := fetchPage(t, viewer, e.ts.URL+"/skills/draftie?in=global"); strings.Contains(body, `id="act-`) {
		t.Error("a viewer is shown action buttons")
	}
	status, body := fetchPage(t, op, e.ts.URL+"/skills/report/rollback?in=global&rev=1")
	if status != http.StatusOK {
		t.Fatalf("confirm: %d\n%s", status, body)
	}
	if !strings.Contains(body, `<strong class="reach">2 live sessions</strong> (sessions with a pre-step in the last 15 minutes`) {
		t.Errorf("the confirmation does not show the 2 live sessions:\n%s", body)
	}
	csrf := csrfOf(t, body)
	// Without the token: refused, nothing written.
	if res, rbody := post(t, op, e.ts.URL, e.ts.URL+"/skills/report/rollback", url.Values{"in": {"global"}, "rev": {"1"}}); res.StatusCode != http.StatusForbidden || !strings.Contains(rbody, "CSRF") {
		t.Errorf("POST without CSRF: %s", res.Status)
	}
	// From another origin: refused.
	if res, _ := post(t, op, "http://evil.example", e.ts.URL+"/skills/report/rollback", url.Values{"in": {"global"}, "rev": {"1"}, "csrf": {csrf}}); res.StatusCode != http.StatusForbidden {
		t.Errorf("POST from another origin: %s", res.Status)
	}
	if h, _ := e.pb.History(ctx, skillstore.Global, "report"); len(h) != 2 {
		t.Fatalf("a refused form wrote: %d revisions", len(h))
	}

	// The release's confirmation: the canary's share of the live ones.
	if _, body := fetchPage(t, op, e.ts.URL+"/skills/draftie/release?in=global&rev=2&share=50"); !strings.Contains(body, "about 1 of 2 live sessions (50%") {
		t.Errorf("the release's blast radius is not the share of the live sessions:\n%s", body)
	}
	for _, a := range acts {
		a.form.Set("csrf", csrf)
		res, rbody := post(t, op, e.ts.URL, e.ts.URL+a.path, a.form)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST %s: %s\n%s", a.path, res.Status, rbody)
		}
		if loc := res.Header.Get("Location"); !strings.Contains(loc, "done=") {
			t.Errorf("POST %s sent to %q", a.path, loc)
		}
		switch a.path {
		case "/skills/report/rollback":
			h, _ := e.pb.History(ctx, skillstore.Global, "report")
			if len(h) != 3 || h[2].Record.Digest != h[0].Record.Digest {
				t.Errorf("rollback: rev 3 does not hold rev 1's files")
			}
		case "/skills/draftie/release":
			st, _ := e.pb.Status(ctx, skillstore.Global, "draftie")
			if st.Channel != store.ChannelCanary || st.Share != 5000 {
				t.Errorf("release: %s %d", st.Channel, st.Share)
			}
		case "/skills/draftie/promote":
			st, _ := e.pb.Status(ctx, skillstore.Global, "draftie")
			if st.Channel != store.ChannelStable || st.Head.Rev != 2 {
				t.Errorf("promote: %s", st.Channel)
			}
		case "/skills/report/pin":
			st, _ := e.pb.Status(ctx, skillstore.Global, "report")
			if len(st.Pins) != 1 || st.Pins[0].Rev != 1 {
				t.Errorf("pin: %+v", st.Pins)
			}
		case "/skills/report/unpin":
			st, _ := e.pb.Status(ctx, skillstore.Global, "report")
			if len(st.Pins) != 0 {
				t.Errorf("unpin: %+v", st.Pins)
			}
		}
	}
	// A refused action is an error page naming why, and audited too.
	res, rbody := post(t, op, e.ts.URL, e.ts.URL+"/skills/report/unpin", url.Values{"in": {"global"}, "csrf": {csrf}})
	if res.StatusCode != http.StatusNotFound || !strings.Contains(rbody, "not pinned") {
		t.Errorf("unpin of an unpinned skill: %s", res.Status)
	}
	var what []string
	for _, a := range e.Actions() {
		s := a.What
		if a.Err != nil {
			s += " (failed)"
		}
		if a.Role != "operator" || a.Tenant != "acme" {
			t.Errorf("action %q by %q of %q", a.What, a.Role, a.Tenant)
		}
		what = append(what, s)
	}
	want := []string{
		"skills rollback report --scope global --to 1",
		"skills release draftie --scope global 2 --canary 50%",
		"skills promote draftie --scope global",
		"skills pin report --scope global --to 1",
		"skills unpin report --scope global",
		"skills unpin report --scope global (failed)",
	}
	if strings.Join(what, "\n") != strings.Join(want, "\n") {
		t.Errorf("audited:\n%s\nwant:\n%s", strings.Join(what, "\n"), strings.Join(want, "\n"))
	}
	// Bad arguments are clear 400s, and a library skill takes no action.
	for path, want := range map[string]string{
		"/skills/draftie/release?in=global&rev=2&share=150": "share",
		"/skills/draftie/release?in=global&share=10":        "which revision",
		"/skills/report/pin?in=global":                      "which revision",
		"/skills/libskill/pin?in=library&rev=1":             "library is read only",
	} {
		if status, body := fetchPage(t, op, e.ts.URL+path); status != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("%s: %d, want 400 naming %q", path, status, want)
		}
	}
}

// TestLiveSessionsWindow: a session whose last pre-step is older than
// the live window is not counted.
func TestLiveSessionsWindow(t *testing.T) {
	srv := natstest.Start(t)
	e := newSkillEnv(t, srv.JS, nil)
	s, err := console.New(console.Config{OperatorToken: operatorToken, Sources: console.Sources{
		JS: e.js, Store: e.pb, Stream: "SESSIONS", Layout: events.LayoutFlat,
	}, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptestServer(t, s)
	c := client(t)
	signIn(t, c, ts, operatorToken)
	if _, body := fetchPage(t, c, ts+"/skills/report/rollback?in=global&rev=1"); !strings.Contains(body, `<strong class="reach">0 live sessions</strong>`) {
		t.Errorf("an hour later, sessions are still live:\n%s", body)
	}
}

// TestLiveSessionsBounded: the live sessions are counted over batches
// of the stream, and a count that reaches its bound says it is a lower
// bound.
func TestLiveSessionsBounded(t *testing.T) {
	srv := natstest.Start(t)
	e := newSkillEnv(t, srv.JS, nil)
	// 1500 more live sessions: more than one batch of the read.
	for i := range 1500 {
		if _, err := e.js.PublishAsync(events.Subject("ev", fmt.Sprintf("bulk%d", i), events.KindPreStep), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-e.js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatal("publishes not acknowledged")
	}
	for _, c := range []struct {
		max  int
		want string
	}{
		{0, "1502 live sessions"},
		{2, "at least 2 live sessions"},
		{1501, "at least 1500 live sessions"}, // 1501 records: s1 twice, s2, 1498 others
	} {
		cfg := e.cfg
		cfg.Sources.Skills.MaxLiveScan = c.max
		ts := startConsole(t, cfg)
		cl := client(t)
		signIn(t, cl, ts.URL, operatorToken)
		if _, body := fetchPage(t, cl, ts.URL+"/skills/report/rollback?in=global&rev=1"); !strings.Contains(body, `<strong class="reach">`+c.want+`</strong>`) {
			t.Errorf("bound %d: want %q:\n%s", c.max, c.want, body)
		}
	}
}

// TestSkillActionUnaudited: with an audit connection but no audit
// service answering, the skill page says who pushed is not shown and
// why, and an action's write is done and said not to be in the trail.
func TestSkillActionUnaudited(t *testing.T) {
	srv := natstest.Start(t)
	e := newSkillEnv(t, srv.JS, srv.Conn)
	c := client(t)
	signIn(t, c, e.ts.URL, operatorToken)
	_, body := fetchPage(t, c, e.ts.URL+"/skills/report?in=global")
	if !strings.Contains(body, "Who wrote each revision is not shown: no audit service answers") {
		t.Errorf("the page does not say why who pushed is not shown")
	}
	res, rbody := post(t, c, e.ts.URL, e.ts.URL+"/skills/report/rollback", url.Values{"in": {"global"}, "rev": {"1"}, "csrf": {csrfOf(t, body)}})
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "unaudited=1") {
		t.Fatalf("rollback: %s %q\n%s", res.Status, loc, rbody)
	}
	if _, body := fetchPage(t, c, e.ts.URL+loc); !strings.Contains(body, "Rolled back.") || !strings.Contains(body, "The audit trail did not record this write") {
		t.Errorf("the page after the action does not say it is not audited:\n%s", body)
	}
}
