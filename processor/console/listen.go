package console

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Environment variables the commands read a console's tokens from (one
// console: `skillstream console`, or serve's without tenants).
const (
	EnvViewerToken   = "SKILLSTREAM_CONSOLE_TOKEN"
	EnvOperatorToken = "SKILLSTREAM_CONSOLE_OPERATOR_TOKEN"
)

// ErrNoToken reports a console that would listen beyond this machine
// with no token to sign in with.
var ErrNoToken = errors.New("no console token")

// CheckTokens reports what is wrong with a console's tokens: none, one
// too short to resist guessing, or both the same.
func CheckTokens(viewer, operator string) error {
	if viewer == "" && operator == "" {
		return errors.New("console: no token: set a viewer or operator token (people sign in with it)")
	}
	if viewer != "" && viewer == operator {
		return errors.New("console: the viewer and operator tokens are the same")
	}
	for _, t := range []string{viewer, operator} {
		if t != "" && len(t) < 16 {
			return errors.New("console: a token must be at least 16 characters")
		}
	}
	return nil
}

// Tokens decides the tokens of a console listening on listen from those
// given: as given when one is; with neither, on a loopback address, a
// random operator token made for this run (made is true: show it to the
// person who started the console); with neither on any other address,
// ErrNoToken.
func Tokens(listen, viewer, operator string) (v, o string, made bool, err error) {
	if viewer != "" || operator != "" {
		return viewer, operator, false, CheckTokens(viewer, operator)
	}
	if !loopback(listen) {
		return "", "", false, fmt.Errorf("%w: the console listens on %s, beyond this machine: set %s (viewer) or %s (operator) to a secret of at least 16 characters",
			ErrNoToken, listen, EnvViewerToken, EnvOperatorToken)
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", "", false, err
	}
	return "", base64.RawURLEncoding.EncodeToString(b), true, nil
}

// Loopback reports whether the listen address addr (host:port) only
// takes connections from this machine.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && host != "" && loopback(host)
}

// HTTPServer is the console's HTTP server for h, its timeouts bounded: a
// slow client cannot hold a connection open.
func HTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      60 * time.Second, // a replay or a large diff takes a while
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
}

// Serve serves h on ln until ctx ends, then shuts the server down within
// 10s.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := HTTPServer(h)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	err := hs.Serve(ln)
	cancel()
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
