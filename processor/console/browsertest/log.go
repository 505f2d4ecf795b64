package browsertest

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Log is what the page said: console calls and uncaught exceptions.
type Log struct {
	mu     sync.Mutex
	lines  []string
	errors []string
}

func listen(ctx context.Context, l *Log) error {
	return chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, strings.Trim(string(a.Value), `"`))
			}
			l.mu.Lock()
			l.lines = append(l.lines, fmt.Sprintf("%s: %s", e.Type, strings.Join(parts, " ")))
			l.mu.Unlock()
		case *runtime.EventExceptionThrown:
			l.mu.Lock()
			msg := e.ExceptionDetails.Text
			if ex := e.ExceptionDetails.Exception; ex != nil && ex.Description != "" {
				msg += ": " + ex.Description
			}
			l.errors = append(l.errors, msg)
			l.mu.Unlock()
		}
	})
}

// Lines are the console calls so far.
func (l *Log) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// Errors are the uncaught exceptions so far.
func (l *Log) Errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errors...)
}
