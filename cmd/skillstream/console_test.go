package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/console"
	"github.com/skillstream/skillstream/processor/console/browsertest"
)

// TestConsoleCommandFleet: `skillstream console` beside a running serve
// prints its URL and, with no token in the environment, an operator token
// made for the run; in a real browser that token signs in and the fleet
// page shows the serving member, the usage projection and the stream.
func TestConsoleCommandFleet(t *testing.T) {
	t.Setenv(console.EnvViewerToken, "")
	t.Setenv(console.EnvOperatorToken, "")
	root := t.TempDir()
	writeFile(t, root, "deploy/SKILL.md", skillMD("Deploy.", "name: deploy", "description: Deploy the app."))
	srv := startServe(t, t.TempDir(), root, "--usage-projection")
	natsAddr := strings.TrimPrefix(srv.url, "nats://")

	// The member serve runs, as the group's service info names it.
	var member string
	nc := srv.connect(t)
	eventually(t, 10*time.Second, "serve's member answers", func() error {
		ms, err := processor.Members(context.Background(), nc, 500*time.Millisecond)
		if err != nil || len(ms) != 1 {
			return errorf("members %v (%v)", ms, err)
		}
		member = ms[0]
		return nil
	})

	base, token, errs := runConsoleCmd(t, "--listen", natsAddr, "--console-listen", "127.0.0.1:0",
		"--no-bundled", "--user-skills-dir=", "--skills-dir", root)

	bctx, log := browsertest.New(t)
	bctx, bcancel := context.WithTimeout(bctx, 60*time.Second)
	defer bcancel()
	if err := chromedp.Do(bctx,
		chromedp.Navigate(base+"fleet"),
		chromedp.WaitVisible(`input[name=token]`),
		chromedp.SendKeys(`input[name=token]`, token),
		chromedp.Submit(`input[name=token]`),
		chromedp.WaitVisible(`#members`),
	); err != nil {
		t.Fatalf("sign in and open the fleet page: %v\n%s", err, errs)
	}
	// A member answers within the page's wait; on a loaded machine it
	// may take another look.
	eventually(t, 30*time.Second, "the fleet page shows serve's member", func() error {
		got, err := chromedp.Run(bctx, chromedp.Text(`#members .instance`))
		if err == nil && got == member {
			summary, err := chromedp.Run(bctx, chromedp.Text(`#fleet-summary`))
			if err != nil || !strings.Contains(summary, "1 member answers") || !strings.Contains(summary, "agree on one catalog") {
				return errorf("summary %q (%v)", summary, err)
			}
			return nil
		}
		if err := chromedp.Do(bctx, chromedp.Reload(), chromedp.WaitVisible(`#fleet-summary`)); err != nil {
			return err
		}
		return errorf("the fleet page shows member %q (%v), serve runs %s", got, err, member)
	})
	role, err := chromedp.Run(bctx, chromedp.Text(`header .role`))
	if err != nil || role != "operator" {
		t.Errorf("signed in as %q (%v)", role, err)
	}
	stream, err := chromedp.Run(bctx, chromedp.Text(`#stream`))
	if err != nil || !strings.Contains(stream, "SESSIONS") {
		t.Errorf("stream table %q (%v)", stream, err)
	}
	// The projection serve keeps: its table (not the note saying there
	// is none) once it wrote its position.
	eventually(t, 30*time.Second, "the fleet page shows the usage projection", func() error {
		if err := chromedp.Do(bctx, chromedp.Reload(), chromedp.WaitVisible(`#projection`)); err != nil {
			return err
		}
		txt, err := chromedp.Run(bctx, chromedp.Text(`#projection`))
		if err != nil || !strings.Contains(txt, "Lag") {
			return errorf("projection %q (%v)", txt, err)
		}
		return nil
	})
	if e := log.Errors(); len(e) > 0 {
		t.Errorf("page errors: %v", e)
	}
}

// TestConsoleRefusesOpenListenWithoutToken: a console reachable beyond
// this machine without a token refuses to start, in console and in
// serve, saying which variables to set; so does a short token, and a
// console with no server to read through.
func TestConsoleRefusesOpenListenWithoutToken(t *testing.T) {
	t.Setenv(console.EnvViewerToken, "")
	t.Setenv(console.EnvOperatorToken, "")
	for _, args := range [][]string{
		{"console", "--console-listen", "0.0.0.0:0"},
		{"serve", "--console-listen", "0.0.0.0:0", "--data", t.TempDir(), "--listen", "127.0.0.1:" + strconv.Itoa(freePort(t))},
	} {
		code, stdout, stderr := runMain(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "no console token") || !strings.Contains(stderr, console.EnvOperatorToken) {
			t.Errorf("%v: exit %d\nstdout %s\nstderr %s", args, code, stdout, stderr)
		}
	}
	t.Setenv(console.EnvViewerToken, "short")
	if code, _, stderr := runMain(t, "console", "--console-listen", "127.0.0.1:0"); code != exitUsage || !strings.Contains(stderr, "at least 16 characters") {
		t.Errorf("a short token: exit %d\n%s", code, stderr)
	}
	// Without a server to read through, the console says so and opens
	// no store folder of its own.
	t.Setenv(console.EnvViewerToken, randomToken(t))
	dir := t.TempDir()
	t.Chdir(dir)
	listen := "127.0.0.1:" + strconv.Itoa(freePort(t))
	if code, _, stderr := runMain(t, "console", "--listen", listen, "--console-listen", "127.0.0.1:0"); code != exitFailure || !strings.Contains(stderr, "no NATS server answers on --listen "+listen) {
		t.Errorf("no server: exit %d\n%s", code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("the console made %v", entries)
	}
}

// TestServeConsoleTenants: serve --console-listen with the shipped
// tenants files serves each tenant's console under /<tenant>/, signed
// in to with that tenant's tokens; acme's token and acme's session open
// none of globex's pages.
func TestServeConsoleTenants(t *testing.T) {
	natsURL, _ := tenantServer(t)
	tokens := map[string]string{}
	for _, v := range []string{"ACME_CONSOLE_TOKEN", "ACME_CONSOLE_OPERATOR_TOKEN", "GLOBEX_CONSOLE_TOKEN", "GLOBEX_CONSOLE_OPERATOR_TOKEN"} {
		tokens[v] = randomToken(t)
		t.Setenv(v, tokens[v])
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	logs := startTenantServe(t, natsURL, "--console-listen", addr)
	base := "http://" + addr
	instance := map[string]string{}
	for _, m := range regexp.MustCompile(`tenant serving"? tenant=(\w+) account=\S+ instance=(\S+)`).FindAllStringSubmatch(logs.String(), -1) {
		instance[m[1]] = m[2]
	}
	if instance["acme"] == "" || instance["globex"] == "" {
		t.Fatalf("the tenants' instances are not logged:\n%s", logs)
	}

	acme := consoleClient(t)
	eventually(t, 30*time.Second, "acme's console is served", func() error {
		return consoleSignIn(acme, base+"/acme/", tokens["ACME_CONSOLE_OPERATOR_TOKEN"])
	})
	fleetShows(t, acme, base+"/acme/fleet", instance["acme"], instance["globex"])
	globex := consoleClient(t)
	eventually(t, 30*time.Second, "globex's console is served", func() error {
		return consoleSignIn(globex, base+"/globex/", tokens["GLOBEX_CONSOLE_TOKEN"])
	})
	if body := fleetShows(t, globex, base+"/globex/fleet", instance["globex"], instance["acme"]); !strings.Contains(body, ">viewer<") {
		t.Errorf("globex's fleet page, signed in as a viewer:\n%s", body)
	}

	// acme's tokens do not sign in to globex's console.
	for _, v := range []string{"ACME_CONSOLE_TOKEN", "ACME_CONSOLE_OPERATOR_TOKEN"} {
		if err := consoleSignIn(consoleClient(t), base+"/globex/", tokens[v]); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("%s signed in to globex's console: %v", v, err)
		}
	}
	// acme's session opens no page of globex's: its cookie is not sent
	// there, and sent by hand it is not globex's console's.
	if code, _ := consoleGet(t, acme, base+"/globex/fleet"); code != http.StatusSeeOther {
		t.Errorf("acme's client on globex's fleet page: %d", code)
	}
	u, _ := url.Parse(base + "/acme/")
	var cookie *http.Cookie
	for _, c := range acme.Jar.Cookies(u) {
		cookie = c
	}
	if cookie == nil {
		t.Fatal("no acme session cookie")
	}
	req, _ := http.NewRequest("GET", base+"/globex/skills", nil)
	req.AddCookie(cookie)
	res, err := acme.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/globex/login") {
		t.Errorf("acme's cookie on globex's pages: %s %s", res.Status, res.Header.Get("Location"))
	}
	// skillstream console with the administrators' file: acme's console
	// over acme's administrator connection sees acme's member alone.
	adminYAML, err := filepath.Abs("deploy/tenants-admin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(console.EnvViewerToken, tokens["ACME_CONSOLE_TOKEN"])
	t.Setenv(console.EnvOperatorToken, "")
	ctx, cancel := context.WithCancel(context.Background())
	out, errs, done := &syncBuffer{}, &syncBuffer{}, make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"console", "--nats-url", natsURL, "--tenants", adminYAML, "--tenant", "acme",
			"--console-listen", "127.0.0.1:0", "--no-bundled", "--user-skills-dir="}, out, errs)
	}()
	defer func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("console exit %d:\n%s", code, errs)
		}
	}()
	var admin string
	eventually(t, 30*time.Second, "the console prints its URL", func() error {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("console exited %d:\n%s", code, errs)
		default:
		}
		m := regexp.MustCompile(`console: (http://\S+/)`).FindStringSubmatch(out.String())
		if m == nil {
			return errorf("stdout %q", out)
		}
		admin = m[1]
		return nil
	})
	if strings.Contains(out.String(), "token, made") {
		t.Errorf("a token was made though one is set: %s", out)
	}
	ac := consoleClient(t)
	if err := consoleSignIn(ac, admin, tokens["ACME_CONSOLE_TOKEN"]); err != nil {
		t.Fatal(err)
	}
	fleetShows(t, ac, admin+"fleet", instance["acme"], instance["globex"])

	// The root names no tenant.
	if code, body := consoleGet(t, consoleClient(t), base+"/"); code != http.StatusNotFound || strings.Contains(body, "acme") || strings.Contains(body, "globex") {
		t.Errorf("/: %d %s", code, body)
	}
	if code, _ := consoleGet(t, consoleClient(t), base+"/initech/login"); code != http.StatusNotFound {
		t.Errorf("an unknown tenant: %d", code)
	}
}

// fleetShows waits until the fleet page at u shows member (it answers
// within the page's wait, which a loaded machine may miss), and checks
// that it never shows other. It returns the page.
func fleetShows(t testing.TB, c *http.Client, u, member, other string) string {
	t.Helper()
	var body string
	eventually(t, 30*time.Second, u+" shows member "+member, func() error {
		var code int
		code, body = consoleGet(t, c, u)
		if code != http.StatusOK || !strings.Contains(body, member) {
			return errorf("%d\n%s", code, body)
		}
		return nil
	})
	if strings.Contains(body, other) {
		t.Errorf("%s shows %s:\n%s", u, other, body)
	}
	return body
}

// consoleClient keeps cookies and does not follow redirects.
func consoleClient(t testing.TB) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// consoleSignIn signs c in to the console at base (ending in /).
func consoleSignIn(c *http.Client, base, token string) error {
	u, _ := url.Parse(base)
	req, _ := http.NewRequest("POST", base+"login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		return errorf("sign in: %s %s", res.Status, b)
	}
	return nil
}

func consoleGet(t testing.TB, c *http.Client, u string) (int, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestServeConsoleAlone: serve --console-listen without tenants serves
// the console at /, signed in to with the operator token of the
// environment, and its fleet page shows serve's own member.
func TestServeConsoleAlone(t *testing.T) {
	token := randomToken(t)
	t.Setenv(console.EnvViewerToken, "")
	t.Setenv(console.EnvOperatorToken, token)
	root := t.TempDir()
	writeFile(t, root, "deploy/SKILL.md", skillMD("Deploy.", "name: deploy", "description: Deploy the app."))
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	srv := startServe(t, t.TempDir(), root, "--console-listen", addr, "--log-level", "info")
	if !strings.Contains(srv.stderr.String(), `"console":"http://`+addr+`/"`) {
		t.Errorf("serve's serving line does not name the console:\n%s", srv.stderr)
	}
	ms, err := processor.Members(context.Background(), srv.connect(t), time.Second)
	if err != nil || len(ms) != 1 {
		t.Fatalf("members %v (%v)", ms, err)
	}
	c := consoleClient(t)
	if err := consoleSignIn(c, "http://"+addr+"/", token); err != nil {
		t.Fatal(err)
	}
	if body := fleetShows(t, c, "http://"+addr+"/fleet", ms[0], "no such member"); !strings.Contains(body, ">operator<") {
		t.Errorf("fleet, signed in as an operator:\n%s", body)
	}
}

// TestServeConsoleTenantChanged: a tenant whose entry changes while
// serve runs gets its console anew, with the tokens its entry names now;
// the other tenants' consoles (and sign-ins) stay as they were.
func TestServeConsoleTenantChanged(t *testing.T) {
	natsURL, _ := tenantServer(t)
	tokens := map[string]string{}
	for _, v := range []string{"ACME_CONSOLE_TOKEN", "ACME_CONSOLE_OPERATOR_TOKEN", "GLOBEX_CONSOLE_TOKEN", "GLOBEX_CONSOLE_OPERATOR_TOKEN", "ACME_CONSOLE_ROTATED"} {
		tokens[v] = randomToken(t)
		t.Setenv(v, tokens[v])
	}
	shipped, err := os.ReadFile(tenantsYAML)
	if err != nil {
		t.Fatal(err)
	}
	yaml := filepath.Join(t.TempDir(), "tenants.yaml")
	writeTenants(t, yaml, string(shipped))
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	logs := runPermittedServe(t, []string{"serve", "--nats-url", natsURL, "--tenants", yaml, "--no-bundled", "--user-skills-dir=",
		"--workers", "4", "--metrics-listen", quietAddr(t), "--console-listen", addr}, "skillstream serving")
	base := "http://" + addr

	acme, globex := consoleClient(t), consoleClient(t)
	eventually(t, 30*time.Second, "the consoles served", func() error {
		if err := consoleSignIn(acme, base+"/acme/", tokens["ACME_CONSOLE_OPERATOR_TOKEN"]); err != nil {
			return err
		}
		return consoleSignIn(globex, base+"/globex/", tokens["GLOBEX_CONSOLE_TOKEN"])
	})

	// acme's operators get a new token variable (and its members fewer
	// workers): acme's entry changed, globex's did not.
	changed := strings.Replace(string(shipped), "console_operator_token_env: ACME_CONSOLE_OPERATOR_TOKEN", "console_operator_token_env: ACME_CONSOLE_ROTATED", 1)
	if changed == string(shipped) {
		t.Fatal("the shipped file names no ACME_CONSOLE_OPERATOR_TOKEN")
	}
	writeTenants(t, yaml, changed)
	eventually(t, 60*time.Second, "acme's console with its new token", func() error {
		if !strings.Contains(logs.String(), "tenants file applied") {
			return errorf("not applied yet")
		}
		return consoleSignIn(consoleClient(t), base+"/acme/", tokens["ACME_CONSOLE_ROTATED"])
	})
	if err := consoleSignIn(consoleClient(t), base+"/acme/", tokens["ACME_CONSOLE_OPERATOR_TOKEN"]); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("acme's old operator token still signs in: %v", err)
	}
	if code, _ := consoleGet(t, acme, base+"/acme/fleet"); code != http.StatusSeeOther {
		t.Errorf("a sign-in to acme's old console still opens its pages: %d", code)
	}
	if code, body := consoleGet(t, globex, base+"/globex/fleet"); code != http.StatusOK || !strings.Contains(body, "<h1>Fleet</h1>") {
		t.Errorf("globex's sign-in after acme's change: %d\n%s", code, body)
	}

	// globex's entry now names acme's token: globex gets no console, and
	// the log says why.
	writeTenants(t, yaml, strings.Replace(changed, "console_operator_token_env: GLOBEX_CONSOLE_OPERATOR_TOKEN", "console_operator_token_env: ACME_CONSOLE_ROTATED", 1))
	eventually(t, 60*time.Second, "globex's console refused", func() error {
		if !strings.Contains(logs.String(), "tenants acme and globex have the same console token") {
			return errorf("not yet")
		}
		return nil
	})
	if code, _ := consoleGet(t, consoleClient(t), base+"/globex/login"); code != http.StatusNotFound {
		t.Errorf("globex's console with acme's token: %d", code)
	}
	if err := consoleSignIn(consoleClient(t), base+"/acme/", tokens["ACME_CONSOLE_ROTATED"]); err != nil {
		t.Errorf("acme's console: %v", err)
	}
}

// runConsoleCmd runs `skillstream console ARGS` until the test ends, and
// returns the URL it prints, the operator token it made (when the
// environment gives none) and its stderr.
func runConsoleCmd(t *testing.T, args ...string) (base, token string, errs *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	errs = &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- Main(ctx, append([]string{"console"}, args...), out, errs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("console exit %d:\n%s", code, errs)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("console did not stop:\n%s", errs)
		}
	})
	urlRE := regexp.MustCompile(`(?m)^console: (http://127\.0\.0\.1:\d+/)$`)
	tokRE := regexp.MustCompile(`(?m)^operator token, made for this run \(set SKILLSTREAM_CONSOLE_OPERATOR_TOKEN to choose one\): (\S{16,})$`)
	eventually(t, 30*time.Second, "console prints its URL", func() error {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("console exited %d:\n%s%s", code, out, errs)
		default:
		}
		u := urlRE.FindStringSubmatch(out.String())
		if u == nil {
			return errorf("stdout %q", out)
		}
		base = u[1]
		if tk := tokRE.FindStringSubmatch(out.String()); tk != nil {
			token = tk[1]
		}
		return nil
	})
	return base, token, errs
}
