package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skillstream/skillstream/processor/console"
	"github.com/skillstream/skillstream/processor/console/browsertest"
)

const (
	viewerToken   = "viewer-token-0123456789"
	operatorToken = "operator-token-0123456789"
)

func startConsole(t *testing.T, cfg console.Config) *httptest.Server {
	t.Helper()
	if cfg.ViewerToken == "" && cfg.OperatorToken == "" {
		cfg.ViewerToken, cfg.OperatorToken = viewerToken, operatorToken
	}
	s, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

// client is a cookie-keeping client that does not follow redirects.
func client(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func signIn(t *testing.T, c *http.Client, base, token string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %s", res.Status)
	}
}

func TestSignInAndGuards(t *testing.T) {
	ts := startConsole(t, console.Config{})
	c := client(t)
	// Not signed in: a page sends to the login form.
	res, err := c.Get(ts.URL + "/skills")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login") {
		t.Errorf("signed out: %s %s", res.Status, res.Header.Get("Location"))
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}
	// A wrong token.
	req, _ := http.NewRequest("POST", ts.URL+"/login", strings.NewReader("token=nope-nope-nope-nope"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if res, err = c.Do(req); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "not this console") {
		t.Errorf("wrong token: %s", res.Status)
	}
	// A login from another origin.
	req, _ = http.NewRequest("POST", ts.URL+"/login", strings.NewReader("token="+operatorToken))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	if res, err = c.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin sign in: %s", res.Status)
	}
	signIn(t, c, ts.URL, viewerToken)
	// A foreign Host.
	req, _ = http.NewRequest("GET", ts.URL+"/login", nil)
	req.Host = "evil.example"
	if res, err = c.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("foreign Host: %s", res.Status)
	}
	// A form without its CSRF token (sign out) is refused.
	req, _ = http.NewRequest("POST", ts.URL+"/logout", strings.NewReader(""))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", ts.URL)
	if res, err = c.Do(req); err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "CSRF") {
		t.Errorf("sign out without CSRF: %s", res.Status)
	}
}

func TestNewRefusesWeakSetups(t *testing.T) {
	for _, cfg := range []console.Config{
		{},
		{ViewerToken: "short"},
		{ViewerToken: viewerToken, OperatorToken: viewerToken},
		{ViewerToken: viewerToken, Base: "acme"},
	} {
		if _, err := console.New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

// TestBrowserSignIn: in a real Chromium, the login form signs in and the
// console's page loads its own stylesheet (the CSP lets it) with no error.
func TestBrowserSignIn(t *testing.T) {
	ts := startConsole(t, console.Config{Tenant: "acme"})
	ctx, log := browsertest.New(t)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/login"),
		chromedp.WaitVisible(`input[name=token]`),
		chromedp.SendKeys(`input[name=token]`, viewerToken),
		chromedp.Submit(`input[name=token]`),
		chromedp.WaitVisible(`header .role`),
	); err != nil {
		t.Fatal(err)
	}
	role, err := chromedp.Run(ctx, chromedp.Text(`header .role`))
	if err != nil || role != "viewer" {
		t.Errorf("role shown %q (%v)", role, err)
	}
	bg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("header")).backgroundColor`))
	if err != nil || bg != "rgb(246, 248, 250)" {
		t.Errorf("the stylesheet did not apply: header background %q (%v)", bg, err)
	}
	if errs := log.Errors(); len(errs) > 0 {
		t.Errorf("page errors: %v", errs)
	}
}
