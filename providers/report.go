package providers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
)

// Reporting: what the registry knows about a query for operators
// (Inspect and Report) and the log of each distinct shadowing, rejection
// and provider error.

// ProviderError is a provider failure kept for operators.
type ProviderError struct {
	Provider string
	Err      error
}

func (e *ProviderError) Error() string { return fmt.Sprintf("provider %q: %v", e.Provider, e.Err) }

func (e *ProviderError) Unwrap() error { return e.Err }

// Shadowed records a candidate that lost its name to another one.
type Shadowed struct {
	Candidate Candidate // the losing candidate (Provider, Source, ResourceBase tell where from)
	By        Candidate // the winner
}

// Rejected records a candidate the registry refused.
type Rejected struct {
	Candidate Candidate
	Err       error // wraps ErrInvalidCandidate and names the provider
}

// Report is what the registry knows about one working directory, for
// operators: winners, shadowed and rejected candidates, provider errors and
// provider diagnostics.
type Report struct {
	Query       catalog.Query
	Snapshot    catalog.Snapshot
	Shadowed    []Shadowed
	Rejected    []Rejected
	Errors      []ProviderError
	Diagnostics []Diagnostic
	// Err is set when ctx was cancelled before the report was complete.
	Err error
}

// Inspect collects a fresh view of q (bypassing the cache) with
// everything operators need: winners, shadowed and rejected candidates,
// provider errors and provider diagnostics.
func (r *Registry) Inspect(ctx context.Context, q catalog.Query) Report {
	rep := Report{Query: q}
	v, err := r.collect(ctx, q)
	if err != nil {
		rep.Err = err
		return rep
	}
	rep.Snapshot = catalog.Snapshot{Skills: v.skills, Complete: v.complete, Revision: v.pos.Revision, Epoch: v.pos.Epoch, Diagnostics: v.diags}
	rep.Shadowed, rep.Rejected, rep.Errors = v.shadowed, v.rejected, v.errs
	rep.Err = r.eachDiagnostic(ctx, q, func(i int, dg Diagnostic, err error) bool {
		if err != nil {
			rep.Errors = append(rep.Errors, ProviderError{Provider: r.names[i], Err: err})
			return true
		}
		rep.Diagnostics = append(rep.Diagnostics, dg)
		return true
	})
	return rep
}

// eachDiagnostic asks every Diagnoser for q's diagnostics and hands each
// one to f (with its provider's name filled in), or the provider's failure
// as err (its diagnostics, if any, follow), until f returns false. It
// returns ctx's error when ctx was cancelled (a deadline only fails the
// provider that ran into it).
func (r *Registry) eachDiagnostic(ctx context.Context, q catalog.Query, f func(i int, dg Diagnostic, err error) bool) error {
	for i, p := range r.ps {
		d, ok := p.(Diagnoser)
		if !ok {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, r.timeout)
		c := r.start(wctx, i, func(ctx context.Context, c *call) {
			c.diags, c.err = d.Diagnostics(ctx, q)
		})
		err := r.wait(wctx, i, c)
		cancel()
		if err != nil {
			if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ctx.Err()
			}
			if !f(i, Diagnostic{}, err) {
				return nil
			}
			continue
		}
		if c.err != nil && !f(i, Diagnostic{}, fmt.Errorf("diagnostics: %w", c.err)) {
			return nil
		}
		for _, dg := range c.diags {
			if dg.Provider == "" {
				dg.Provider = r.names[i]
			}
			if !f(i, dg, nil) {
				return nil
			}
		}
	}
	return nil
}

// MaxDiagnostics bounds the diagnostics a view carries for workers;
// Inspect (for operators) has them all.
const MaxDiagnostics = 16

// diagnose returns what the providers say they skipped in q's project
// folders (catalog.SourceProject): the files of the session's own
// project, which the person working in it can mend. Diagnostics of the
// operator's folders stay with the operator (logs, validate, Inspect).
// At most MaxDiagnostics, each reason at most 512 bytes; a provider that
// fails or is slow adds nothing. It runs when a view is collected, not per
// request: the providers' scans are fresh from listing.
func (r *Registry) diagnose(ctx context.Context, q catalog.Query) []Diagnostic {
	if q.Cwd == "" {
		return nil
	}
	var out []Diagnostic
	r.eachDiagnostic(ctx, q, func(_ int, dg Diagnostic, err error) bool {
		if err != nil || dg.Source != catalog.SourceProject {
			return true
		}
		dg.Reason = clipText(dg.Reason, 512)
		out = append(out, dg)
		return len(out) < MaxDiagnostics
	})
	return out
}

// clipText cuts s to at most n bytes at a character boundary, marking the
// cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

const maxLogged = 4096

// logView logs each distinct shadowing, rejection and provider error
// once, and once each winner whose description holds control or
// bidirectional-text characters (catalog.FindControl).
func (r *Registry) logView(q catalog.Query, v *view) {
	if r.log == nil {
		return
	}
	for _, s := range v.shadowed {
		key := fmt.Sprintf("shadow\x00%s\x00%s\x00%s\x00%v", s.Candidate.Name, where(s.Candidate), where(s.By), q)
		if r.once(key) {
			r.log.Info("skill shadowed", append(queryAttrs(q), "skill", s.Candidate.Name,
				"shadowed", where(s.Candidate), "by", where(s.By))...)
		}
	}
	for _, rj := range v.rejected {
		if r.once("reject\x00" + rj.Err.Error()) {
			r.log.Warn("skill candidate rejected", append(queryAttrs(q), "err", rj.Err)...)
		}
	}
	for _, pe := range v.errs {
		if errors.Is(pe.Err, ErrStopping) {
			continue
		}
		if r.once(fmt.Sprintf("error\x00%s\x00%v\x00%s", pe.Provider, q, pe.Err)) {
			r.log.Warn("skill snapshot incomplete", append(queryAttrs(q), "provider", pe.Provider, "err", pe.Err)...)
		}
	}
	for _, s := range v.skills {
		// The catalog carries a description as its author wrote it: the
		// operator hears of what a terminal or a reader would not see.
		i, c, n := catalog.FindControl(s.Description, true)
		if n == 0 {
			continue
		}
		from := where(Candidate{Summary: s})
		if r.once(fmt.Sprintf("text\x00%s\x00%s\x00%d\x00%d\x00%d", s.Name, from, i, c, n)) {
			r.log.Warn("skill description holds control characters, which the catalog carries as they are",
				"skill", s.Name, "from", from, "char", fmt.Sprintf("%U", c), "kind", catalog.ControlKind(c), "count", n)
		}
	}
}

// queryAttrs are the log attributes naming a query: its cwd, and its store
// project when it has one.
// clipLog shortens a worker's string for a log line: at most 300 bytes of
// it, followed by its length.
func clipLog(s string) string {
	const n = 300
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

func queryAttrs(q catalog.Query) []any {
	attrs := []any{"cwd", clipLog(q.Cwd)}
	if q.Project != "" {
		attrs = append(attrs, "project", q.Project)
	}
	return attrs
}

func (r *Registry) once(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.logged[key]; ok {
		return false
	}
	if len(r.logged) >= maxLogged {
		clear(r.logged)
	}
	r.logged[key] = struct{}{}
	return true
}

// where describes a candidate's origin for logs.
func where(c Candidate) string {
	s := c.Provider + "/" + c.Source
	if rb := c.ResourceBase; rb != nil && rb.Where() != "" {
		s += " " + rb.Where()
	}
	return s
}
