package main

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
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// benchAppendHeader marks, for the baseline consumer, a trigger whose
// session expects a catalog now (its first pre-step, or the first after a
// catalog change): the baseline appends exactly where the processor would,
// without deciding anything.
const benchAppendHeader = "Skillstream-Bench-Append"

// benchClient is the worker side of the load: one connection, one wildcard
// reply subscription shared by every request, each request routed by the
// last token of its Reply-Inbox. That is cheaper than a subscription per
// request, and what a worker process serving many sessions would do.
type benchClient struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	sub     *nats.Subscription
	base    string // reply inbox prefix, ending in "."
	timeout time.Duration
	tries   int

	mu      sync.Mutex
	waiting map[uint64]chan *nats.Msg
	next    atomic.Uint64
}

// errBenchTimeout reports a trigger that got no answer in any attempt.
var errBenchTimeout = errors.New("no answer")

func newBenchClient(nc *nats.Conn, timeout time.Duration, tries, maxPending int) (*benchClient, error) {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(maxPending))
	if err != nil {
		return nil, fmt.Errorf("jetstream context: %w", err)
	}
	c := &benchClient{nc: nc, js: js, base: nc.NewInbox() + ".", timeout: timeout, tries: tries, waiting: map[uint64]chan *nats.Msg{}}
	sub, err := nc.Subscribe(c.base+"*", c.route)
	if err != nil {
		return nil, fmt.Errorf("subscribe reply inbox: %w", err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("reply inbox limits: %w", err)
	}
	c.sub = sub
	return c, nil
}

func (c *benchClient) close() { _ = c.sub.Unsubscribe() }

// route hands a reply to the request waiting for it; late replies to
// abandoned attempts are dropped.
func (c *benchClient) route(m *nats.Msg) {
	id, err := strconv.ParseUint(strings.TrimPrefix(m.Subject, c.base), 10, 64)
	if err != nil {
		return
	}
	c.mu.Lock()
	ch, ok := c.waiting[id]
	delete(c.waiting, id)
	c.mu.Unlock()
	if ok {
		ch <- m // buffered, one reply per id
	}
}

func (c *benchClient) forget(id uint64) {
	c.mu.Lock()
	delete(c.waiting, id)
	c.mu.Unlock()
}

// request appends a trigger (subject, data, extra headers) and waits for
// its answer. Without an answer in time it publishes the trigger again as a
// new message with a new Nats-Msg-Id (PROTOCOL.md: answers can be lost), at
// most tries times. It returns the answer and how many attempts it took.
func (c *benchClient) request(ctx context.Context, subject, msgID string, hdr nats.Header, data []byte) (*nats.Msg, int, error) {
	for attempt := 1; attempt <= c.tries; attempt++ {
		id := c.next.Add(1)
		ch := make(chan *nats.Msg, 1)
		c.mu.Lock()
		c.waiting[id] = ch
		c.mu.Unlock()
		m := &nats.Msg{Subject: subject, Header: make(nats.Header, len(hdr)+2), Data: data}
		for k, v := range hdr {
			m.Header[k] = v
		}
		m.Header.Set(events.HeaderReplyInbox, c.base+strconv.FormatUint(id, 10))
		m.Header.Set(events.HeaderMsgID, msgID+":"+strconv.Itoa(attempt))
		fut, err := c.js.PublishMsgAsync(m)
		if err != nil {
			c.forget(id)
			return nil, attempt, fmt.Errorf("append %s: %w", subject, err)
		}
		timer := time.NewTimer(c.timeout)
		select {
		case r := <-ch:
			timer.Stop()
			return r, attempt, nil
		case err := <-fut.Err():
			timer.Stop()
			c.forget(id)
			return nil, attempt, fmt.Errorf("append %s: %w", subject, err)
		case <-timer.C:
			c.forget(id)
		case <-ctx.Done():
			timer.Stop()
			c.forget(id)
			return nil, attempt, ctx.Err()
		}
	}
	return nil, c.tries, fmt.Errorf("%s: %w after %d attempts of %v", subject, errBenchTimeout, c.tries, c.timeout)
}

// benchPlan is the workload of one phase.
type benchPlan struct {
	prefix      string // subject prefix of the phase's stream
	runID       string // makes session ids unique per run
	sessions    int
	steps       int
	calls       int // skill calls after each pre-step
	concurrency int // sessions in flight at once
	enc         events.Encoding
	owner       string   // tool owner in the tool view
	skills      []string // names the skill calls ask for
	cwds        []string // working directories, one per project (none: no cwd)
	markAppends bool     // baseline: tell the consumer where to append
}

// benchCounters are the running totals of one phase; the progress line
// reads them while sessions run.
type benchCounters struct {
	preSteps atomic.Int64 // answered
	calls    atomic.Int64 // answered
	appends  atomic.Int64 // outputs appended (catalogs and tool results)
	errors   atomic.Int64
	retries  atomic.Int64 // extra attempts after a missing answer
	sessions atomic.Int64 // finished

	mu       sync.Mutex
	outcomes map[string]int64 // pre-step outcomes and tool result codes
	firstErr []string         // a few distinct errors, for the report
}

func newBenchCounters() *benchCounters { return &benchCounters{outcomes: map[string]int64{}} }

func (c *benchCounters) outcome(k string) {
	c.mu.Lock()
	c.outcomes[k]++
	c.mu.Unlock()
}

func (c *benchCounters) fail(err error) {
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

// benchChanges changes the skill catalog k times during a phase, evenly
// spread over its planned pre-steps. The session whose pre-step crosses a
// threshold makes the change, so no goroutine polls. The epoch counts the
// changes made; a session that sees it move expects a catalog next.
type benchChanges struct {
	at    []int64 // pre-step counts at which to change
	apply func(i int) error
	epoch atomic.Int64
	mu    sync.Mutex
	err   error
}

func newBenchChanges(k int, total int64, apply func(i int) error) *benchChanges {
	ch := &benchChanges{apply: apply}
	for i := 1; i <= k; i++ {
		ch.at = append(ch.at, max(total*int64(i)/int64(k+1), 1))
	}
	return ch
}

// crossed is called with the pre-step count after each answer.
func (ch *benchChanges) crossed(n int64) {
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

// toggleSkill returns the change function of a skills root: odd changes
// add a skill, even ones remove it, so that every change alters the catalog.
func toggleSkill(root string) func(i int) error {
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
		body := benchSkillMD("bench-changing", fmt.Sprintf("A skill that comes and goes during the benchmark (change %d).", i))
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(body), 0o644); err != nil {
			return fmt.Errorf("catalog change %d: %w", i, err)
		}
		return nil
	}
}

// benchSkillMD is a generated SKILL.md of about 1.5 KB.
func benchSkillMD(name, description string) string {
	var b strings.Builder
	b.WriteString("---\nname: " + name + "\ndescription: '" + strings.ReplaceAll(description, "'", "''") + "'\n---\n")
	b.WriteString("# " + name + "\n\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "%d. Step %d of the %s procedure: read the relevant files, then act carefully.\n", i, i, name)
	}
	return b.String()
}

// runBenchLoad plays the plan's sessions against the phase's stream until
// they are done or ctx ends, recording latencies into samples.
func runBenchLoad(ctx context.Context, cl *benchClient, p benchPlan, cnt *benchCounters, samples *benchSamples, changes *benchChanges) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(p.concurrency, p.sessions) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= p.sessions || ctx.Err() != nil {
					return
				}
				local := benchLocal{}
				benchSession(ctx, cl, p, i, cnt, local, changes)
				samples.merge(local)
				cnt.sessions.Add(1)
			}
		}()
	}
	wg.Wait()
}

// benchSession plays one session: steps pre-steps, each followed by calls
// skill calls, each waiting for its answer.
func benchSession(ctx context.Context, cl *benchClient, p benchPlan, i int, cnt *benchCounters, local benchLocal, changes *benchChanges) {
	sid := fmt.Sprintf("%s-%07d", p.runID, i)
	cwd := ""
	if len(p.cwds) > 0 {
		cwd = p.cwds[i%len(p.cwds)]
	}
	hdr := nats.Header{events.HeaderContentType: []string{p.enc.ContentType()}}
	tools := []events.Tool{{Name: "read_file", Owner: "agent"}, {Name: catalog.ToolName, Owner: p.owner}}
	seen := changes.epoch.Load()
	for step := 1; step <= p.steps; step++ {
		if ctx.Err() != nil {
			return
		}
		stepID := "s" + strconv.Itoa(step)
		epoch := changes.epoch.Load()
		expect := step == 1 || epoch != seen
		seen = epoch
		h := hdr
		if p.markAppends && expect {
			h = nats.Header{events.HeaderContentType: hdr[events.HeaderContentType], benchAppendHeader: []string{"1"}}
		}
		body, err := events.Encode(p.enc, events.PreStep{V: events.Version, Session: sid, Step: stepID, Cwd: cwd, Tools: tools})
		if err != nil {
			cnt.fail(fmt.Errorf("encode pre-step: %w", err))
			return
		}
		start := time.Now()
		m, tries, err := cl.request(ctx, events.Subject(p.prefix, sid, events.KindPreStep), sid+":"+stepID, h, body)
		took := time.Since(start)
		cnt.retries.Add(int64(tries - 1))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			cnt.fail(fmt.Errorf("pre-step: %w", err))
			continue
		}
		n := cnt.preSteps.Add(1)
		changes.crossed(n)
		d, err := events.DecodeDecision(p.enc, m.Data)
		if err != nil {
			cnt.fail(fmt.Errorf("decode decision: %w", err))
			continue
		}
		cnt.outcome(d.Outcome)
		local.add(seriesPreStep, took)
		switch d.Outcome {
		case events.OutcomeAppended:
			cnt.appends.Add(1)
			local.add(seriesAppended, took)
		case events.OutcomeUnchanged:
			local.add(seriesUnchanged, took)
		case events.OutcomeEmpty:
		default:
			msg := d.Outcome
			if d.Error != nil {
				msg += ": " + d.Error.Message
			}
			cnt.fail(fmt.Errorf("pre-step answered %s", msg))
		}
		for c := 1; c <= p.calls; c++ {
			if ctx.Err() != nil {
				return
			}
			callID := stepID + "-c" + strconv.Itoa(c)
			name := p.skills[(i+step+c)%len(p.skills)]
			body, err := events.Encode(p.enc, events.SkillCall{V: events.Version, Session: sid, Call: callID, Cwd: cwd, Args: events.SkillArgs{Name: name}})
			if err != nil {
				cnt.fail(fmt.Errorf("encode skill call: %w", err))
				return
			}
			start := time.Now()
			m, tries, err := cl.request(ctx, events.Subject(p.prefix, sid, events.KindSkillCall), sid+":"+callID, hdr, body)
			took := time.Since(start)
			cnt.retries.Add(int64(tries - 1))
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				cnt.fail(fmt.Errorf("skill call: %w", err))
				continue
			}
			cnt.calls.Add(1)
			r, err := events.DecodeToolResult(p.enc, m.Data)
			if err != nil {
				cnt.fail(fmt.Errorf("decode tool result: %w", err))
				continue
			}
			local.add(seriesSkillCall, took)
			if r.IsError {
				code := "error"
				if r.Error != nil {
					code = r.Error.Code
				}
				cnt.outcome("tool " + code)
				if code != events.CodeExpired && code != events.CodeBadRequest && code != codeUnavailableBench {
					cnt.appends.Add(1) // an error result is appended too
				}
				cnt.fail(fmt.Errorf("skill call answered %s", r.Text))
				continue
			}
			cnt.outcome("tool ok")
			cnt.appends.Add(1)
		}
	}
}

// codeUnavailableBench is the code of an answer given without an append
// (dead letter, panic).
const codeUnavailableBench = "unavailable"
