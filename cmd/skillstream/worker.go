package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// worker plays an agent worker over the wire protocol (PROTOCOL.md): it
// appends triggers to one session's log with a Reply-Inbox header and waits
// for the processor's answer on that inbox. The demo uses it, and so do the
// tests that drive a running serve.
type worker struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	prefix  string
	session string
	owner   string // tool owner whose skill tool is in the tool view
	inbox   string
	sub     *nats.Subscription
	attempt int
}

// newWorker subscribes the worker's reply inbox. Close unsubscribes it.
func newWorker(nc *nats.Conn, prefix, session, owner string) (*worker, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream context: %w", err)
	}
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("subscribe reply inbox: %w", err)
	}
	return &worker{nc: nc, js: js, prefix: prefix, session: session, owner: owner, inbox: inbox, sub: sub}, nil
}

func (w *worker) Close() error { return w.sub.Unsubscribe() }

// tools is the worker's tool view with the processor's skill tool in it.
func (w *worker) tools() []events.Tool {
	return []events.Tool{{Name: "read_file", Owner: "agent"}, {Name: catalog.ToolName, Owner: w.owner}}
}

// publish appends a trigger and returns its stream sequence.
func (w *worker) publish(ctx context.Context, kind events.Kind, id string, v any, reply bool) (uint64, error) {
	body, err := events.Encode(events.Msgpack, v)
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", kind, err)
	}
	w.attempt++
	m := nats.NewMsg(events.Subject(w.prefix, w.session, kind))
	m.Data = body
	m.Header.Set(events.HeaderContentType, events.ContentTypeMsgpack)
	m.Header.Set(events.HeaderMsgID, w.session+":"+id+":"+strconv.Itoa(w.attempt))
	if reply {
		m.Header.Set(events.HeaderReplyInbox, w.inbox)
	}
	ack, err := w.js.PublishMsg(ctx, m)
	if err != nil {
		return 0, fmt.Errorf("append %s: %w", kind, err)
	}
	return ack.Sequence, nil
}

// answer waits for the next reply on the inbox.
func (w *worker) answer(ctx context.Context) (*nats.Msg, events.Encoding, error) {
	m, err := w.sub.NextMsgWithContext(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("wait for the answer: %w", err)
	}
	enc, err := events.EncodingOf(m.Header.Get(events.HeaderContentType))
	if err != nil {
		return nil, 0, fmt.Errorf("answer: %w", err)
	}
	return m, enc, nil
}

// preStep appends an agent.pre-step with the skill tool visible and returns
// the processor's Decision.
func (w *worker) preStep(ctx context.Context, step, cwd string) (events.Decision, error) {
	ps := events.PreStep{V: events.Version, Session: w.session, Step: step, Cwd: cwd, Tools: w.tools()}
	return request(ctx, w, events.KindPreStep, step, ps, events.DecodeDecision)
}

// call appends a tool.call.skill and returns the processor's ToolResult.
func (w *worker) call(ctx context.Context, id, cwd, name string) (events.ToolResult, error) {
	sc := events.SkillCall{V: events.Version, Session: w.session, Call: id, Cwd: cwd, Args: events.SkillArgs{Name: name}}
	return request(ctx, w, events.KindSkillCall, id, sc, events.DecodeToolResult)
}

// request appends trigger v of kind and decodes the processor's answer.
func request[T any](ctx context.Context, w *worker, kind events.Kind, id string, v any, decode func(events.Encoding, []byte) (T, error)) (T, error) {
	var answer T
	if _, err := w.publish(ctx, kind, id, v, true); err != nil {
		return answer, err
	}
	m, enc, err := w.answer(ctx)
	if err != nil {
		return answer, err
	}
	if answer, err = decode(enc, m.Data); err != nil {
		return answer, fmt.Errorf("decode answer to %s: %w", kind, err)
	}
	return answer, nil
}

// compact appends a context.compact keeping only events from retainFrom on
// visible to the model, and returns its sequence.
func (w *worker) compact(ctx context.Context, retainFrom uint64) (uint64, error) {
	c := events.Compaction{V: events.Version, Session: w.session, RetainFrom: retainFrom}
	return w.publish(ctx, events.KindCompaction, "compact", c, false)
}
