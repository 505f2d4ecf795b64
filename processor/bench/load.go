package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// AppendHeader marks, for the baseline consumer, a trigger whose
// session expects a catalog now (its first pre-step, or the first after a
// catalog change): the baseline appends exactly where the processor would,
// without deciding anything.
const AppendHeader = "Skillstream-Bench-Append"

// Plan is the workload of one phase.
type Plan struct {
	Prefix   string // subject prefix of the phase's stream
	RunID    string // makes session ids unique per run
	Sessions int
	Steps    int
	Calls    int // skill calls after each pre-step
	// Searches are skill searches after each pre-step's calls, each for
	// one of Queries in turn; with any, the sessions' tool view holds
	// the skill_search tool (search is offered to them).
	Searches    int
	Queries     []string
	Concurrency int // sessions in flight at once
	Enc         events.Encoding
	Owner       string        // tool owner in the tool view
	Skills      []string      // names the skill calls ask for
	Cwds        []string      // working directories, one per project (none: no cwd)
	MarkAppends bool          // baseline: tell the consumer where to append
	Timeout     time.Duration // wait this long for an answer before publishing again
	Tries       int           // attempts per trigger
	// Gestures: every Gestures-th pre-step of a session carries a user's
	// message invoking one skill by /name (0: none).
	Gestures int
}

// Counters are the running totals of one phase; the progress line
// reads them while sessions run.
type Counters struct {
	preSteps atomic.Int64 // answered
	calls    atomic.Int64 // answered
	searches atomic.Int64 // answered
	appends  atomic.Int64 // outputs appended (catalogs and tool results)
	errors   atomic.Int64
	retries  atomic.Int64 // extra attempts after a missing answer
	sessions atomic.Int64 // finished

	mu       sync.Mutex
	outcomes map[string]int64 // pre-step outcomes and tool result codes
	catalogs map[string]int64 // catalog text bytes appended, by form (source.update)
	firstErr []string         // a few distinct errors, for the report
}

func NewCounters() *Counters {
	return &Counters{outcomes: map[string]int64{}, catalogs: map[string]int64{}}
}

// catalog counts the text of a catalog appended in the form update.
func (c *Counters) catalog(update string, text int) {
	c.mu.Lock()
	c.catalogs[update] += int64(text)
	c.mu.Unlock()
}

func (c *Counters) outcome(k string) {
	c.mu.Lock()
	c.outcomes[k]++
	c.mu.Unlock()
}

func (c *Counters) fail(err error) {
	c.errors.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	msg := err.Error()
	if len(c.firstErr) < 5 && !containsString(c.firstErr, msg) {
		c.firstErr = append(c.firstErr, msg)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Changes changes the skill catalog k times during a phase, evenly
// spread over its planned pre-steps. The session whose pre-step crosses a
// threshold makes the change, so no goroutine polls. The epoch counts the
// changes made; a session that sees it move expects a catalog next.
type Changes struct {
	at    []int64 // pre-step counts at which to change
	apply func(i int) error
	epoch atomic.Int64
	mu    sync.Mutex
	err   error
}

func NewChanges(k int, total int64, apply func(i int) error) *Changes {
	ch := &Changes{apply: apply}
	for i := 1; i <= k; i++ {
		ch.at = append(ch.at, max(total*int64(i)/int64(k+1), 1))
	}
	return ch
}

// crossed is called with the pre-step count after each answer.
func (ch *Changes) crossed(n int64) {
	for i, at := range ch.at {
		if n == at {
			if ch.apply != nil {
				if err := ch.apply(i + 1); err != nil {
					ch.mu.Lock()
					ch.err = errors.Join(ch.err, err)
					ch.mu.Unlock()
				}
			}
			ch.epoch.Add(1)
		}
	}
}

// ToggleSkill returns the change function of a skills root: odd changes
// add a skill, even ones remove it, so that every change alters the catalog.
func ToggleSkill(root string) func(i int) error {
	dir := filepath.Join(root, "bench-changing")
	return func(i int) error {
		if i%2 == 0 {
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("catalog change %d: %w", i, err)
			}
			return nil
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("catalog change %d: %w", i, err)
		}
		body := SkillMD("bench-changing", fmt.Sprintf("A skill that comes and goes during the benchmark (change %d).", i))
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(body), 0o644); err != nil {
			return fmt.Errorf("catalog change %d: %w", i, err)
		}
		return nil
	}
}

// SkillMD is a generated SKILL.md of about 1.5 KB.
func SkillMD(name, description string) string {
	var b strings.Builder
	b.WriteString("---\nname: " + name + "\ndescription: '" + strings.ReplaceAll(description, "'", "''") + "'\n---\n")
	b.WriteString("# " + name + "\n\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "%d. Step %d of the %s procedure: read the relevant files, then act carefully.\n", i, i, name)
	}
	return b.String()
}

// Progress is a phase's running totals, for a progress line.
type Progress struct {
	Elapsed                                              time.Duration
	PreSteps, SkillCalls, Searches, Errors, Sessions, Of int64
}

// RunPhase plays the plan's sessions on nc until they are done or duration
// has passed, calling tick with the running totals every second, and
// returns the phase's report (CPU and memory are the caller's to fill).
func RunPhase(ctx context.Context, nc *nats.Conn, p Plan, duration time.Duration, changes *Changes, tick func(Progress)) (*PhaseReport, error) {
	cl, err := client.New(nc, client.WithPrefix(p.Prefix), client.WithEncoding(p.Enc),
		client.WithRetryInterval(p.Timeout), client.WithMaxAttempts(p.Tries), client.WithMaxPending(2*p.Concurrency+256))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	cnt := NewCounters()
	samples := NewSamples()
	start := time.Now()
	done := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				tick(Progress{Elapsed: time.Since(start), PreSteps: cnt.preSteps.Load(), SkillCalls: cnt.calls.Load(),
					Searches: cnt.searches.Load(), Errors: cnt.errors.Load(), Sessions: cnt.sessions.Load(), Of: int64(p.Sessions)})
			}
		}
	}()
	runLoad(pctx, cl, p, cnt, samples, changes)
	elapsed := time.Since(start)
	close(done)
	<-ticked

	ph := &PhaseReport{
		Seconds:    elapsed.Seconds(),
		Complete:   cnt.sessions.Load() == int64(p.Sessions),
		PreSteps:   cnt.preSteps.Load(),
		SkillCalls: cnt.calls.Load(),
		Searches:   cnt.searches.Load(),
		Appends:    cnt.appends.Load(),
		Errors:     cnt.errors.Load(),
		Retries:    cnt.retries.Load(),
		Outcomes:   cnt.outcomes,
		Catalogs:   cnt.catalogs,
		Latency:    samples.summaries(),
	}
	ph.ErrorSamples = cnt.firstErr
	if changes.err != nil {
		ph.ErrorSamples = append(ph.ErrorSamples, changes.err.Error())
	}
	secs := elapsed.Seconds()
	ph.PreStepsPerSec = float64(ph.PreSteps) / secs
	ph.SkillCallsPerSec = float64(ph.SkillCalls) / secs
	ph.SearchesPerSec = float64(ph.Searches) / secs
	ph.AppendsPerSec = float64(ph.Appends) / secs
	return ph, nil
}

// runLoad plays the plan's sessions against the phase's stream until
// they are done or ctx ends, recording latencies into samples.
func runLoad(ctx context.Context, cl *client.Client, p Plan, cnt *Counters, samples *Samples, changes *Changes) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(p.Concurrency, p.Sessions) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= p.Sessions || ctx.Err() != nil {
					return
				}
				local := Local{}
				playSession(ctx, cl, p, i, cnt, local, changes)
				samples.merge(local)
				cnt.sessions.Add(1)
			}
		}()
	}
	wg.Wait()
}

// playSession plays one session: steps pre-steps, each followed by calls
// skill calls and searches skill searches, each waiting for its answer.
func playSession(ctx context.Context, cl *client.Client, p Plan, i int, cnt *Counters, local Local, changes *Changes) {
	sid := fmt.Sprintf("%s-%07d", p.RunID, i)
	cwd := ""
	if len(p.Cwds) > 0 {
		cwd = p.Cwds[i%len(p.Cwds)]
	}
	tools := []events.Tool{{Name: "read_file", Owner: "agent"}, client.SkillTool(p.Owner)}
	if p.Searches > 0 {
		tools = append(tools, client.SkillSearchTool(p.Owner))
	}
	seen := changes.epoch.Load()
	var tries int
	for step := 1; step <= p.Steps; step++ {
		if ctx.Err() != nil {
			return
		}
		stepID := "s" + strconv.Itoa(step)
		epoch := changes.epoch.Load()
		expect := step == 1 || epoch != seen
		seen = epoch
		opts := []client.CallOption{client.Attempts(&tries)}
		if p.MarkAppends && expect {
			opts = append(opts, client.Header(AppendHeader, "1"))
		}
		ps := events.PreStep{Session: sid, Step: stepID, Cwd: cwd, Tools: tools}
		if p.Gestures > 0 && step%p.Gestures == 0 {
			ps.UserText = []string{"please use /" + p.Skills[(i+step)%len(p.Skills)] + " for this"}
		}
		start := time.Now()
		d, err := cl.PreStep(ctx, ps, opts...)
		took := time.Since(start)
		cnt.retries.Add(int64(max(tries-1, 0)))
		if d.Outcome == "" { // no answer
			if ctx.Err() != nil {
				return
			}
			cnt.fail(fmt.Errorf("pre-step: %w", err))
			continue
		}
		n := cnt.preSteps.Add(1)
		changes.crossed(n)
		cnt.outcome(d.Outcome)
		if k := len(d.Invocations); k > 0 {
			cnt.appends.Add(int64(k))
			cnt.outcome("invocation")
		}
		local.add(SeriesPreStep, took)
		switch {
		case err != nil:
			cnt.fail(fmt.Errorf("pre-step answered %s: %w", d.Outcome, err))
		case d.Outcome == events.OutcomeAppended:
			cnt.appends.Add(1)
			local.add(SeriesAppended, took)
			if d.Catalog != nil {
				cnt.catalog(d.Catalog.Source.Update, len(d.Catalog.Text))
			}
		case d.Outcome == events.OutcomeUnchanged && len(d.Invocations) == 1:
			local.add(SeriesInvoked, took)
		case d.Outcome == events.OutcomeUnchanged:
			local.add(SeriesUnchanged, took)
		case d.Outcome == events.OutcomeEmpty:
		default:
			msg := d.Outcome
			if d.Error != nil {
				msg += ": " + d.Error.Message
			}
			cnt.fail(fmt.Errorf("pre-step answered %s", msg))
		}
		for c := 1; c <= p.Calls; c++ {
			if ctx.Err() != nil {
				return
			}
			callID := stepID + "-c" + strconv.Itoa(c)
			name := p.Skills[(i+step+c)%len(p.Skills)]
			start := time.Now()
			r, err := cl.CallSkill(ctx, events.SkillCall{Session: sid, Call: callID, Cwd: cwd, Args: events.SkillArgs{Name: name}}, client.Attempts(&tries))
			took := time.Since(start)
			cnt.retries.Add(int64(max(tries-1, 0)))
			if r.V == 0 { // no answer
				if ctx.Err() != nil {
					return
				}
				cnt.fail(fmt.Errorf("skill call: %w", err))
				continue
			}
			cnt.calls.Add(1)
			local.add(SeriesSkillCall, took)
			if r.IsError {
				code := "error"
				if r.Error != nil {
					code = r.Error.Code
				}
				cnt.outcome("tool " + code)
				if code != events.CodeExpired && code != events.CodeBadRequest && code != client.CodeUnavailable {
					cnt.appends.Add(1) // an error result is appended too
				}
				cnt.fail(fmt.Errorf("skill call answered %s", r.Text))
				continue
			}
			if err != nil {
				cnt.fail(fmt.Errorf("skill call: %w", err))
				continue
			}
			cnt.outcome("tool ok")
			cnt.appends.Add(1)
		}
		for q := 1; q <= p.Searches; q++ {
			if ctx.Err() != nil {
				return
			}
			callID := stepID + "-q" + strconv.Itoa(q)
			query := p.Queries[(i+step+q)%len(p.Queries)]
			start := time.Now()
			r, err := cl.SearchSkills(ctx, events.SkillSearch{Session: sid, Call: callID, Cwd: cwd, Args: events.SearchArgs{Query: query}}, client.Attempts(&tries))
			took := time.Since(start)
			cnt.retries.Add(int64(max(tries-1, 0)))
			if r.V == 0 { // no answer
				if ctx.Err() != nil {
					return
				}
				cnt.fail(fmt.Errorf("skill search: %w", err))
				continue
			}
			cnt.searches.Add(1)
			local.add(SeriesSkillSearch, took)
			switch {
			case r.IsError:
				code := "error"
				if r.Error != nil {
					code = r.Error.Code
				}
				cnt.outcome("search " + code)
				if code != events.CodeExpired && code != client.CodeUnavailable {
					cnt.appends.Add(1) // an error result is appended too
				}
				cnt.fail(fmt.Errorf("skill search answered %s", r.Text))
			case err != nil:
				cnt.fail(fmt.Errorf("skill search: %w", err))
			case r.Search != nil && len(r.Search.Results) > 0:
				cnt.outcome("search found")
				cnt.appends.Add(1)
			default:
				cnt.outcome("search nothing")
				cnt.appends.Add(1)
			}
		}
	}
}

// Queries returns the search queries of a workload over WriteSkills'
// skills: n queries naming one area each, matching its skill best, and
// one in ten matching nothing.
func Queries(n int) []string {
	out := make([]string, 0, n)
	for i := 1; i <= n; i++ {
		if i%10 == 0 {
			out = append(out, "quantum chromodynamics on a lattice")
			continue
		}
		out = append(out, fmt.Sprintf("releases and reviews of area %d", i))
	}
	return out
}
