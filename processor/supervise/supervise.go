// Package supervise keeps several processors serving side by side, each
// started and retried on its own: one tenant's stream, consumer or store
// that cannot be prepared (missing, replaced by something else, not
// answering) leaves that tenant unserved and reported, never the others.
//
// A unit is one processor and what serves beside it (cmd/skillstream
// builds it). The supervisor starts every unit at once; a unit whose start
// fails is logged (one line per attempt, with the reason), counted, and
// started again after a backoff that doubles from Backoff.Min to
// Backoff.Max, with jitter. A unit that served and stopped is started
// again the same way. Readiness (Readiness) reports each unit, and asks
// each serving unit whether it still serves at most once per CheckEvery,
// however many callers ask.
//
// Units can be added and removed while the supervisor runs (Add, Remove):
// a removed unit is stopped as at shutdown, finishing what it has in
// flight, while the others serve on. Watch keeps the units those a
// configuration file names, as the file is edited.
//
// The supervisor stops on its own only when no unit can ever serve: every
// unit's last start failed with an error the retry policy does not retry
// (Permanent, or Config.Retry says so).
package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Config.
const (
	DefaultBackoffMin = time.Second
	DefaultBackoffMax = time.Minute
	DefaultCheckEvery = time.Second
)

// Backoff is the wait between a unit's failed start and the next: Min
// after the first failure, doubling up to Max, each wait drawn between
// half and all of that (jitter, so that members restarted together do not
// retry together).
type Backoff struct {
	Min, Max time.Duration
}

// Delay is the wait after the attempt-th failure in a row (1 for the first).
func (b Backoff) Delay(attempt int) time.Duration {
	if b.Min <= 0 {
		b.Min = DefaultBackoffMin
	}
	if b.Max < b.Min {
		b.Max = max(b.Min, DefaultBackoffMax)
	}
	d := b.Min
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	return d/2 + rand.N(d/2+1)
}

// permanent marks an error no retry can fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err as one no retry fixes (an invalid configuration):
// the unit is not started again. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// Serving is a started unit.
type Serving interface {
	// Run serves until ctx ends and returns nil then; any return before
	// that (an error or not) is a stop, and the unit is started again.
	Run(ctx context.Context) error
	// Ready is closed once the unit serves.
	Ready() <-chan struct{}
	// Check reports whether a unit that served still does (connected,
	// its consumer there). Readiness asks it at most once per CheckEvery.
	Check(ctx context.Context) error
	// Notes are lines readiness shows under a serving unit (problems that
	// do not make it unready), each without a secret.
	Notes() []string
}

// Unit is one processor to keep serving.
type Unit struct {
	// Name names the unit in logs, metrics and readiness (a tenant's
	// name); "" for the only unit of a process without tenants.
	Name string
	// Start builds and prepares the unit (stream, consumer, store); its
	// error says why the unit cannot serve now. Start is called again
	// after a backoff, unless the error is not retried.
	Start func(ctx context.Context) (Serving, error)
	// Failed, when set, is called after each failed start or stop, before
	// it is logged.
	Failed func(error)
}

// Config configures a Supervisor.
type Config struct {
	Backoff Backoff
	// StartTimeout bounds each start (Unit.Start): one that has not
	// finished by then is abandoned and retried like a failed one (a
	// request lost while a cluster elects its leader waits no longer);
	// 0 for none.
	StartTimeout time.Duration
	// CheckEvery bounds how often Readiness asks a unit's Check: its
	// answer is reused for this long (default DefaultCheckEvery).
	CheckEvery time.Duration
	// Retry says whether a failed start is tried again; nil retries every
	// error that is not Permanent.
	Retry  func(error) bool
	Logger *slog.Logger
	// Registerer gets skillstream_tenant_up and
	// skillstream_tenant_start_failures_total, labelled by the unit's name
	// (label tenant; "" for the only unit); nil registers none.
	Registerer prometheus.Registerer
}

// Supervisor keeps its units serving.
type Supervisor struct {
	cfg   Config
	log   *slog.Logger
	units []*unit

	up       *prometheus.GaugeVec
	failures *prometheus.CounterVec

	mu      sync.Mutex      // guards units, every unit's state and the three below
	runCtx  context.Context // while Run runs: the context units run under
	running sync.WaitGroup  // the units' goroutines of this Run
	changed chan struct{}   // a unit gave up or was removed: Run looks again
	gen     atomic.Uint64   // bumped when a unit starts or stops serving
	checkMu sync.Mutex      // one readiness report made at a time; guards the three below
	checked time.Time       // when the cached report was made
	hadGen  uint64          // gen when it was made
	report  Report
}

// unit is a Unit and its state.
type unit struct {
	Unit
	current  Serving            // the started unit, from Start's return until it stops
	serving  Serving            // the started unit, while it serves; nil otherwise
	lastErr  error              // the last start's or stop's error; nil while serving
	attempts int                // failed starts in a row
	gaveUp   bool               // a failure not retried
	cancel   context.CancelFunc // stops this unit (Remove); nil until launched
	done     chan struct{}      // closed once its goroutine returned
}

// New makes a supervisor of units (their names distinct).
func New(cfg Config, units []Unit) (*Supervisor, error) {
	if len(units) == 0 {
		return nil, errors.New("supervise: no units")
	}
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = DefaultCheckEvery
	}
	if cfg.Retry == nil {
		cfg.Retry = func(err error) bool { return !IsPermanent(err) }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Supervisor{cfg: cfg, log: cfg.Logger, changed: make(chan struct{}, 1)}
	seen := map[string]bool{}
	for _, u := range units {
		if seen[u.Name] {
			return nil, fmt.Errorf("supervise: unit %q twice", u.Name)
		}
		seen[u.Name] = true
		s.units = append(s.units, &unit{Unit: u, lastErr: errStarting})
	}
	s.up = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "skillstream", Name: "tenant_up",
		Help: "1 while the tenant's processor (without tenants: the processor, tenant \"\") serves, 0 while it starts or waits to be started again."}, []string{"tenant"})
	s.failures = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "skillstream", Name: "tenant_start_failures_total",
		Help: "Failed starts (and unexpected stops) of the tenant's processor; each is started again after a backoff unless the error is a configuration one."}, []string{"tenant"})
	for _, u := range s.units {
		s.up.WithLabelValues(u.Name).Set(0)
		s.failures.WithLabelValues(u.Name)
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{s.up, s.failures} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("supervise: register metrics: %w", err)
			}
		}
	}
	return s, nil
}

var errStarting = errors.New("starting")

// Run starts every unit and keeps it serving until ctx ends; it returns
// nil then, once every unit has stopped. It returns early, with every
// unit's reason, only when no unit serves and none will be started again.
func (s *Supervisor) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	if s.runCtx != nil {
		s.mu.Unlock()
		return errors.New("supervise: Run called twice")
	}
	s.runCtx = ctx
	for _, u := range s.units {
		s.launch(u)
	}
	s.mu.Unlock()
	var err error
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-s.changed:
			if s.noneLeft() {
				err = s.allFailed()
				break wait
			}
		}
	}
	cancel()
	s.running.Wait()
	return err
}

// launch starts keeping u in a goroutine of Run's. s.mu is held.
func (s *Supervisor) launch(u *unit) {
	uctx, ucancel := context.WithCancel(s.runCtx)
	u.cancel, u.done = ucancel, make(chan struct{})
	s.running.Go(func() {
		defer close(u.done)
		defer ucancel()
		if !s.keep(uctx, u) {
			s.poke()
		}
	})
}

// poke has Run look at the units again.
func (s *Supervisor) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// noneLeft reports whether every unit gave up (none serves, and none will
// be started again).
func (s *Supervisor) noneLeft() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.units) == 0 {
		return false
	}
	for _, u := range s.units {
		if !u.gaveUp {
			return false
		}
	}
	return true
}

// ErrUnknownUnit is Remove's error for a name no unit has.
var ErrUnknownUnit = errors.New("supervise: no such unit")

// Add adds a unit (its name not one of the others'): started at once when
// the supervisor runs, with the others when Run starts otherwise.
func (s *Supervisor) Add(u Unit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.units {
		if v.Name == u.Name {
			return fmt.Errorf("supervise: unit %q twice", u.Name)
		}
	}
	nu := &unit{Unit: u, lastErr: errStarting}
	s.units = append(s.units, nu)
	s.up.WithLabelValues(u.Name).Set(0)
	s.failures.WithLabelValues(u.Name)
	if s.runCtx != nil && s.runCtx.Err() == nil {
		s.launch(nu)
	}
	s.invalidate()
	return nil
}

// Remove stops the unit called name and forgets it: its Run's context
// ends (a processor finishes the triggers it has in flight) and Remove
// returns once it has stopped, or when ctx ends first (the unit then
// stops on its own). Its metrics' series are dropped.
func (s *Supervisor) Remove(ctx context.Context, name string) error {
	s.mu.Lock()
	i := slices.IndexFunc(s.units, func(u *unit) bool { return u.Name == name })
	if i < 0 {
		s.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrUnknownUnit, name)
	}
	u := s.units[i]
	s.units = slices.Delete(s.units, i, i+1)
	s.invalidate()
	s.mu.Unlock()
	if u.cancel != nil {
		u.cancel()
		select {
		case <-u.done:
		case <-ctx.Done():
			return fmt.Errorf("supervise: stop unit %q: %w", name, ctx.Err())
		}
	}
	s.up.DeleteLabelValues(name)
	s.failures.DeleteLabelValues(name)
	s.poke()
	return nil
}

// Names lists the units' names.
func (s *Supervisor) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.units))
	for i, u := range s.units {
		out[i] = u.Name
	}
	return out
}

// allFailed is the error of a supervisor none of whose units can serve.
func (s *Supervisor) allFailed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.units) == 1 {
		return s.units[0].lastErr
	}
	var parts []string
	for _, u := range s.units {
		parts = append(parts, u.Name+": "+u.lastErr.Error())
	}
	return fmt.Errorf("no tenant can be served: %s", strings.Join(parts, "; "))
}

// keep starts u, runs it, and starts it again after each failure until
// ctx ends (true) or a failure is not retried (false).
func (s *Supervisor) keep(ctx context.Context, u *unit) bool {
	log := s.log
	if u.Name != "" {
		log = log.With("tenant", u.Name)
	}
	for {
		err := s.once(ctx, u)
		if ctx.Err() != nil {
			return true
		}
		retry := s.cfg.Retry(err)
		s.mu.Lock()
		u.attempts++
		u.lastErr = err
		u.gaveUp = !retry
		attempts := u.attempts
		s.mu.Unlock()
		s.mu.Lock()
		if slices.Contains(s.units, u) { // not removed meanwhile
			s.failures.WithLabelValues(u.Name).Inc()
		}
		s.mu.Unlock()
		if u.Failed != nil {
			u.Failed(err)
		}
		if !retry {
			log.Error("not serving: not retried (a configuration error)", "err", err, "attempt", attempts)
			return false
		}
		wait := s.cfg.Backoff.Delay(attempts)
		log.Warn("not serving: retrying", "err", err, "attempt", attempts, "retry_in", wait.Round(time.Millisecond).String())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return true
		case <-t.C:
		}
	}
}

// once starts u and serves until it stops or ctx ends; it returns why the
// unit does not serve (nil once ctx ended).
func (s *Supervisor) once(ctx context.Context, u *unit) error {
	sctx, scancel := ctx, context.CancelFunc(func() {})
	if s.cfg.StartTimeout > 0 {
		sctx, scancel = context.WithTimeout(ctx, s.cfg.StartTimeout)
	}
	sv, err := u.Start(sctx)
	scancel()
	if err != nil {
		return err
	}
	s.mu.Lock()
	u.current = sv
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		u.current = nil
		s.mu.Unlock()
	}()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sv.Run(rctx) }()
	select {
	case err = <-done:
	case <-sv.Ready():
		s.mu.Lock()
		u.serving, u.lastErr, u.attempts = sv, nil, 0
		s.mu.Unlock()
		s.setUp(u, 1)
		s.invalidate()
		err = <-done
		s.setUp(u, 0)
		why := err // until keep records the stop's error, readiness says this
		if why == nil {
			why = errors.New("stopped")
		}
		s.mu.Lock()
		u.serving, u.lastErr = nil, why
		s.mu.Unlock()
		s.invalidate()
	}
	if ctx.Err() != nil {
		return nil
	}
	if err == nil {
		err = errors.New("stopped unexpectedly")
	}
	return err
}

// setUp sets u's skillstream_tenant_up, unless u was removed (its
// series dropped).
func (s *Supervisor) setUp(u *unit, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.units, u) {
		s.up.WithLabelValues(u.Name).Set(v)
	}
}

// invalidate drops the cached readiness report: a unit started or stopped.
func (s *Supervisor) invalidate() { s.gen.Add(1) }

// newlyReady reports whether a unit that did not serve when the cached
// report was made serves now. s.checkMu is held.
func (s *Supervisor) newlyReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.units) != len(s.report.Units) {
		return true
	}
	for i, u := range s.units {
		if s.report.Units[i].Name != u.Name || !s.report.Units[i].served && u.current != nil && closed(u.current.Ready()) {
			return true
		}
	}
	return false
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// UnitReport is one unit's readiness.
type UnitReport struct {
	Name  string
	Ready bool
	// Why it is not ready (the last start's error, or the check's).
	Why   string
	Notes []string
	// served: it served when the report was made (its Check was asked).
	served bool
}

// Report is the readiness of every unit.
type Report struct {
	Units []UnitReport
	At    time.Time
}

// Ready reports whether every unit is.
func (r Report) Ready() bool {
	for _, u := range r.Units {
		if !u.Ready {
			return false
		}
	}
	return true
}

// Readiness reports every unit: ready when it serves and its Check
// passes. The report is made at most once per CheckEvery (and again as
// soon as a unit starts or stops serving): concurrent callers wait for the
// one being made and share it, so a unit's Check runs at most once per
// CheckEvery however often readiness is asked.
func (s *Supervisor) Readiness(ctx context.Context) Report {
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	gen := s.gen.Load()
	if !s.checked.IsZero() && gen == s.hadGen && time.Since(s.checked) < s.cfg.CheckEvery && !s.newlyReady() {
		return s.report
	}
	type state struct {
		name    string
		serving Serving
		err     error
		gaveUp  bool
	}
	s.mu.Lock()
	states := make([]state, len(s.units))
	for i, u := range s.units {
		states[i] = state{u.Name, u.serving, u.lastErr, u.gaveUp}
		if u.serving == nil && u.current != nil && closed(u.current.Ready()) {
			// It serves, and may have said so, before the supervisor
			// noticed: readiness says so at the same moment.
			states[i].serving = u.current
		}
	}
	s.mu.Unlock()
	r := Report{Units: make([]UnitReport, len(states)), At: time.Now()}
	var wg sync.WaitGroup
	for i, st := range states {
		ur := &r.Units[i]
		ur.Name = st.name
		if st.serving == nil {
			if st.err == nil { // never so (a unit not serving has its reason), but never a crash
				st.err = errStarting
			}
			ur.Why = "not serving: " + st.err.Error()
			if st.err == errStarting {
				ur.Why = "processor starting"
			} else if st.gaveUp {
				ur.Why += " (not retried)"
			}
			continue
		}
		ur.served = true
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if err := st.serving.Check(cctx); err != nil {
				ur.Why = err.Error()
				return
			}
			ur.Ready, ur.Notes = true, st.serving.Notes()
		})
	}
	wg.Wait()
	s.report, s.checked, s.hadGen = r, time.Now(), gen
	return r
}
