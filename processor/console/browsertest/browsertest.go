// Package browsertest starts a real headless Chromium for tests of the
// console: Debian's package (/usr/bin/chromium), or the browser
// SKILLSTREAM_CHROMIUM names. A missing browser fails the test with how to
// install it; nothing is skipped.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path is the browser the tests run.
func Path() string {
	if p := os.Getenv("SKILLSTREAM_CHROMIUM"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// New starts a headless browser with a fresh profile, closed when the test
// ends, and returns a context of its first tab (each chromedp.Run on it
// acts in that tab). Console messages and page errors the browser reports
// are collected in the returned Log.
func New(t testing.TB) (context.Context, *Log) {
	t.Helper()
	path := Path()
	if path == "" {
		t.Fatal("no Chromium: the console's browser tests need Debian's chromium (apt-get install chromium) or SKILLSTREAM_CHROMIUM=/path/to/chrome")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("no-pings", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	l := &Log{}
	// Start the browser now (the first action's context is the browser's
	// life, so it is ctx itself), within a bound: a browser that cannot
	// start fails here, not in the first step.
	timer := time.AfterFunc(60*time.Second, cancel)
	err := chromedp.Do(ctx)
	timer.Stop()
	if err == nil {
		err = listen(ctx, l)
	}
	if err != nil {
		cancel()
		cancelA()
		t.Fatalf("start %s: %v", path, err)
	}
	t.Cleanup(func() {
		cancel()
		cancelA()
	})
	return ctx, l
}
