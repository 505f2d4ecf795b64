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
func (p *Processor) pull(ctx context.Context, cons jetstream.Consumer, slots chan struct{}, start func(jetstream.Msg), pulling chan<- struct{}) {
	for ctx.Err() == nil {
		// Wait for one free worker, then ask for as many triggers as are
		// free: each delivered trigger finds its slot at once.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		n := 1 + cap(slots) - len(slots)
		<-slots
		// No more than the trigger rate allows (Config.MaxTriggerRate).
		n, err := p.rate.wait(ctx, n)
		if err != nil {
			return
		}
		// No idle heartbeat: a fetch that gave up on missed heartbeats
		// would withdraw its inbox while the server may still deliver to
		// it. A lost pull request costs at most pullExpiry.
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(pullExpiry))
		if err != nil {
			p.log.Debug("pull", "err", err)
			if pause(ctx, pullRetry) != nil {
				return
			}
			continue
		}
		if pulling != nil {
			close(pulling)
			pulling = nil
		}
		for msg := range batch.Messages() {
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
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			p.log.Debug("pull", "err", err)
			if pause(ctx, pullRetry) != nil {
				return
			}
		}
	}
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
const (
	pullExpiry = time.Second
	pullRetry  = 250 * time.Millisecond
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
