package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pull is the consumer loop: one pull request at a time, for as many
// triggers as there are free workers, each started with start once it holds
// a slot. Unlike a subscription withdrawn at shutdown, whose pull request
// may still be delivering to it, pull keeps reading the open request until
// the server ends it: every trigger delivered to this instance is either
// started or handed back, none is left waiting for the ack wait. pulling
// is closed once the first pull request has been sent.
//
// A member must notice when it stops pulling. Each pull request lives
// pullExpiry and the next one follows at once, so a request the server
// drops costs that much; but some losses repeat at every request, and a
// loop that only logs its failed pulls at debug level then pulls nothing
// for as long as they last, unseen (the consumer shows no waiting pull
// request while its backlog grows). What nats.go's Fetch does and does not
// tell (jetstream/pull.go, v1.56.0):
//   - a request expiring at the server ends with a 408, which Fetch reports
//     as a batch without error, exactly like its own timer giving up a
//     request the server never answered: without heartbeats a lost
//     request cannot be told from an idle one. With FetchHeartbeat the
//     server sends an idle heartbeat while it holds the request, and Fetch
//     ends with ErrNoHeartbeat after two intervals without a word.
//   - a consumer leader that loses its leadership answers the requests it
//     held with a 409 (ErrConsumerLeadershipChanged); a leader that is
//     stopped may answer nothing: the next request goes to the new leader.
//   - a deleted consumer ends the requests it held with a 409
//     (ErrConsumerDeleted); requests to a consumer that does not exist (or
//     has no leader right now, during an election) fail, or go unanswered:
//     Fetch never looks the consumer up again, so a consumer deleted for
//     good, or replaced by a push consumer, fails every request forever.
//   - while the connection is down Fetch's subscription and request wait
//     in the client's reconnect buffer; nothing answers until it is back.
//
// So pull requests carry heartbeats (pullHeartbeat), and pullWatch keeps
// the time since the server last had a word for this member's requests: a
// trigger, a heartbeat, an expiry, a leader change. A leader change is
// counted and pulled again at once. Failures or silence lasting
// Config.PullStallAfter while connected (or a deleted consumer, at once)
// are logged as a warning, counted, and answered by looking the consumer
// up again (relookup): it may have moved, been recreated, or be gone, and
// then provisioning creates it again; the look-ups back off, from the
// bound up to pullBackoffMax, until a request is answered again.
func (p *Processor) pull(ctx context.Context, cons jetstream.Consumer, slots chan struct{}, start func(jetstream.Msg), pulling chan<- struct{}) {
	w := pullWatch{bound: p.cfg.PullStallAfter}
	var busySaid time.Time
	for ctx.Err() == nil {
		// Wait for one free worker, then ask for as many triggers as are
		// free: each delivered trigger finds its slot at once.
		select {
		case slots <- struct{}{}:
		default:
			if !p.waitForWorker(ctx, slots, &busySaid) {
				return
			}
		}
		n := 1 + cap(slots) - len(slots)
		<-slots
		// No more than the trigger rate allows (Config.MaxTriggerRate).
		n, err := p.rate.wait(ctx, n)
		if err != nil {
			return
		}
		began := p.now()
		got := 0
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(pullExpiry), jetstream.FetchHeartbeat(pullHeartbeat))
		if err == nil {
			if pulling != nil {
				close(pulling)
				pulling = nil
			}
			for msg := range batch.Messages() {
				got++
				if ctx.Err() != nil {
					p.handBack(msg)
					continue
				}
				select {
				case slots <- struct{}{}:
					p.rate.take()
					start(msg)
				case <-ctx.Done():
					p.handBack(msg)
				}
			}
			err = batch.Error()
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, nats.ErrTimeout) {
			err = nil
		}
		if err != nil {
			p.log.Debug("pull", "err", err)
		}
		switch w.pulled(began, p.now(), got, err, p.nc.IsConnected()) {
		case pullAgain:
			if err != nil && pause(ctx, pullRetry) != nil {
				return
			}
		case pullNow:
			p.m.pullRestarts.WithLabelValues(restartLeaderChange).Inc()
		case pullRelookup:
			cons = p.relookup(ctx, cons, &w)
			if pause(ctx, pullRetry) != nil {
				return
			}
		}
	}
}

// waitForWorker waits for a free worker (a slot in slots) while every one
// is busy, and reports false when ctx ended first. Not pulling then is by
// design, not a stall; but from outside it looks the same (the consumer
// holds no pull request of this member while its backlog grows), so a
// wait past the stall bound is logged, at most once per busyWarnEvery.
func (p *Processor) waitForWorker(ctx context.Context, slots chan struct{}, said *time.Time) bool {
	t := time.NewTimer(p.cfg.PullStallAfter)
	defer t.Stop()
	for {
		select {
		case slots <- struct{}{}:
			return true
		case <-ctx.Done():
			return false
		case <-t.C:
			if now := p.now(); said.IsZero() || now.Sub(*said) >= busyWarnEvery {
				*said = now
				p.log.Warn("every worker busy: not pulling until one is free", "workers", cap(slots), "for", p.cfg.PullStallAfter)
			}
		}
	}
}

// busyWarnEvery bounds how often waitForWorker logs.
const busyWarnEvery = time.Minute

// Why pull began again (pull_restarts_total's reason label).
const (
	restartLeaderChange = "leader_change" // the consumer's leader changed: its pull request is gone
	restartConsumerGone = "consumer_gone" // the consumer was deleted (or its stream)
	restartNoHeartbeat  = "no_heartbeat"  // requests went unanswered for the stall bound
	restartFailing      = "failing"       // requests failed for the stall bound
)

var pullRestartReasons = []string{restartLeaderChange, restartConsumerGone, restartNoHeartbeat, restartFailing}

// pullWatch is the pull loop's watchdog: it follows the outcome of each
// pull request and says when the loop should look its consumer up again.
// It is the loop's alone (no locking).
type pullWatch struct {
	bound time.Duration // Config.PullStallAfter

	since   time.Time // when the current run of failed or unanswered requests began; zero: none
	reason  string    // of the last failure in it
	err     error     // the last failure in it
	next    time.Time // no look-up before this (backoff)
	backoff time.Duration
}

// What the pull loop does after a request.
type pullStep int

const (
	pullAgain    pullStep = iota // pull again (after pullRetry if the request failed)
	pullNow                      // the leader changed: pull again at once
	pullRelookup                 // look the consumer up again, then pull
)

// pulled records the outcome of a pull request begun at began and ended
// at now, which delivered got triggers and ended with err (nil: the server
// ended it, or it was filled), and says what to do next.
func (w *pullWatch) pulled(began, now time.Time, got int, err error, connected bool) pullStep {
	switch {
	case err == nil:
		w.answered()
		return pullAgain
	case errors.Is(err, jetstream.ErrConsumerLeadershipChanged):
		w.answered()
		return pullNow
	}
	deleted := errors.Is(err, jetstream.ErrConsumerDeleted)
	if got > 0 && !deleted {
		// Triggers came, so the server had the request: what failed came
		// after them (a heartbeat lost under load, say).
		w.answered()
		return pullAgain
	}
	if w.since.IsZero() {
		w.since = began
	}
	w.err = err
	switch {
	case deleted, errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		w.reason = restartConsumerGone
	case errors.Is(err, jetstream.ErrNoHeartbeat):
		w.reason = restartNoHeartbeat
	default:
		w.reason = restartFailing
	}
	if !connected {
		// The connection is down: nothing can answer, and the connection
		// reconnects by itself. The bound runs from its return.
		w.since = now
		return pullAgain
	}
	if now.Before(w.next) {
		return pullAgain
	}
	if w.reason == restartConsumerGone || now.Sub(w.since) >= w.bound {
		return pullRelookup
	}
	return pullAgain
}

// answered records that the server had a word for the last request.
func (w *pullWatch) answered() {
	w.since, w.err, w.reason = time.Time{}, nil, ""
	w.next, w.backoff = time.Time{}, 0
}

// lookedUp records a look-up at now: the next one waits for the backoff
// (from the bound, doubling up to pullBackoffMax), and a new run of
// failures has to last the bound again.
func (w *pullWatch) lookedUp(now time.Time) {
	w.backoff = min(max(2*w.backoff, w.bound), pullBackoffMax)
	w.next = now.Add(w.backoff)
	w.since = now
}

// pullBackoffMax bounds the wait between two look-ups of the consumer.
const pullBackoffMax = time.Minute

// relookup is the pull loop's answer to requests that failed or went
// unanswered for the stall bound, or to a deleted consumer: it warns,
// counts, and looks the consumer up again, returning the handle to pull
// through next. A consumer that is gone is created again unless
// provisioning is off; one that cannot be found or made is reported, and
// looked up again after the backoff.
func (p *Processor) relookup(ctx context.Context, cons jetstream.Consumer, w *pullWatch) jetstream.Consumer {
	now := p.now()
	silent := now.Sub(w.since).Round(time.Millisecond)
	w.lookedUp(now)
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	found, err := p.js.Consumer(rctx, p.cfg.Stream, p.cfg.Consumer)
	gone := errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound)
	reason := w.reason
	if gone {
		reason = restartConsumerGone
	}
	p.m.pullRestarts.WithLabelValues(reason).Inc()
	log := p.log.With("consumer", p.cfg.Consumer, "stream", p.cfg.Stream, "reason", reason, "for", silent, "last_err", w.err)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		log.Error("pulling stopped: the stream is gone; a member creates it when it starts", "retry_in", w.backoff)
	case gone && p.cfg.NoProvision:
		log.Error("pulling stopped: the consumer is gone and provisioning is off; create it again", "retry_in", w.backoff)
	case gone:
		made, err := p.js.CreateOrUpdateConsumer(rctx, p.cfg.Stream, p.cfg.consumerConfig())
		if err != nil {
			log.Error("pulling stopped: the consumer is gone and could not be created again", "err", err, "retry_in", w.backoff)
			return cons
		}
		log.Warn("pulling stopped: the consumer was gone; created it again and pulling anew")
		return made
	case err != nil:
		log.Warn("pulling stopped: pull requests fail or go unanswered, and the consumer cannot be looked up", "err", err, "retry_in", w.backoff)
	case found.CachedInfo().Config.DeliverSubject != "":
		log.Error("pulling stopped: the consumer is a push consumer now; replace it with the pull consumer the processors need", "retry_in", w.backoff)
	default:
		log.Warn("pulling stopped: pull requests fail or go unanswered; looked the consumer up again and pulling anew",
			"leader", leaderOf(found.CachedInfo()))
		return found
	}
	return cons
}

// leaderOf names the consumer's leader in a cluster ("" otherwise).
func leaderOf(info *jetstream.ConsumerInfo) string {
	if info == nil || info.Cluster == nil {
		return ""
	}
	return info.Cluster.Leader
}

// settle sends an acknowledgement (ack, nak or term) for msg. While the
// processor runs it is one publication. Once it is stopping, settle waits
// until the server confirms it has applied the acknowledgement to the
// consumer: the server only queues a plain one, and one still queued when
// the server stops (an embedded server stopping with serve) is lost, its
// trigger then waiting a whole ack wait for redelivery.
func (p *Processor) settle(msg jetstream.Msg, ack []byte) error {
	reply := msg.Reply()
	if reply == "" {
		return jetstream.ErrMsgNoReply
	}
	if !p.stopping.Load() {
		return p.nc.Publish(reply, ack)
	}
	_, err := p.nc.Request(reply, ack, p.cfg.RequestTimeout)
	return err
}

// nakWithDelay is the body of a negative acknowledgement asking for
// redelivery after d.
func nakWithDelay(d time.Duration) []byte {
	return fmt.Appendf(nil, `-NAK {"delay": %d}`, d.Nanoseconds())
}

// handBack returns a trigger the processor received but will not start
// because it is stopping: negatively acknowledged after NakDelay (not at
// once, so that it does not come straight back to this instance's pull
// request, which is being withdrawn).
func (p *Processor) handBack(msg jetstream.Msg) {
	p.m.handedBack.Inc()
	if err := p.settle(msg, nakWithDelay(p.cfg.NakDelay)); err != nil {
		p.log.Warn("hand back trigger at shutdown", "subject", msg.Subject(), "err", err)
	}
}

// consumerStatsPeriod is how often the consumer's backlog gauges are read.
const consumerStatsPeriod = 5 * time.Second

// watchConsumer keeps the consumer_pending and consumer_ack_pending gauges
// up to date, reading the consumer's info at once and then every
// statsPeriod (consumerStatsPeriod), until ctx is done.
func (p *Processor) watchConsumer(ctx context.Context, cons jetstream.Consumer) {
	tick := time.NewTicker(p.statsPeriod)
	defer tick.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
		info, err := cons.Info(rctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			p.log.Debug("read consumer info", "consumer", p.cfg.Consumer, "err", err)
		case err == nil:
			p.m.pending.Set(float64(info.NumPending))
			p.m.ackPending.Set(float64(info.NumAckPending))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Pull request timing: a pull request lives at most pullExpiry, so a lost
// one (or one held by a consumer leader that went away) is replaced within
// a second, and shutdown waits at most that long for the last one to end;
// after a failed pull the next one waits pullRetry.
//
// The server sends a heartbeat every pullHeartbeat while it holds a request
// with nothing to deliver; Fetch gives a request up after two intervals
// without a word (ErrNoHeartbeat), that is after pullExpiry, when a
// request that reached the server at once has expired there too. One the
// server took later than half an interval, and that delivers after the
// member gave it up, leaves its triggers to the ack wait: the price of
// telling a lost request from an idle one (see pull).
const (
	pullExpiry    = time.Second
	pullHeartbeat = pullExpiry / 2
	pullRetry     = 250 * time.Millisecond
)

// keepAlive tells the server that the delivery is still being worked on,
// about every AckWait/3 from now, until the returned function is called; no
// heartbeat is sent once it returns. One loop (heartbeats) serves every
// trigger in flight: most finish long before their first heartbeat is due,
// so a goroutine and a ticker each would be wasted.
func (p *Processor) keepAlive(msg jetstream.Msg) (stop func()) {
	return p.beats.add(msg, p.now().Add(p.cfg.AckWait/3))
}

// heartbeats sends the progress heartbeats of the triggers in flight.
type heartbeats struct {
	period time.Duration // between two heartbeats of one trigger

	mu     sync.Mutex
	beat   map[*beating]struct{}
	closed chan struct{}
}

type beating struct {
	msg jetstream.Msg
	due time.Time
}

func newHeartbeats(period time.Duration) *heartbeats {
	return &heartbeats{period: period, beat: make(map[*beating]struct{}), closed: make(chan struct{})}
}

func (h *heartbeats) add(msg jetstream.Msg, due time.Time) func() {
	b := &beating{msg: msg, due: due}
	h.mu.Lock()
	h.beat[b] = struct{}{}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.beat, b)
		h.mu.Unlock()
	}
}

// run sends due heartbeats until stop is closed. It looks every period/2,
// so a heartbeat goes out at most AckWait/3 + AckWait/6 = AckWait/2 after
// the previous one (or the start), well within AckWait.
func (h *heartbeats) run(stop <-chan struct{}, now func() time.Time) {
	defer close(h.closed)
	tick := time.NewTicker(h.period / 2)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		t := now()
		h.mu.Lock() // held while sending: no heartbeat once a trigger's stop returned
		for b := range h.beat {
			if !t.Before(b.due) {
				_ = b.msg.InProgress() // a lost heartbeat at worst means a redelivery
				b.due = t.Add(h.period)
			}
		}
		h.mu.Unlock()
	}
}
