package main

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// worker plays one agent session with the worker client: its tool view
// holds the skill tool of owner. The tests that drive a running serve use
// it.
type worker struct {
	c       *client.Client
	session string
	owner   string // tool owner whose skill tool is in the tool view
}

// newWorker starts a client on nc. Close ends it (nc stays open).
func newWorker(nc *nats.Conn, prefix, session, owner string) (*worker, error) {
	c, err := client.New(nc, client.WithPrefix(prefix))
	if err != nil {
		return nil, fmt.Errorf("worker client: %w", err)
	}
	return &worker{c: c, session: session, owner: owner}, nil
}

func (w *worker) Close() error { return w.c.Close() }

// tools is the worker's tool view with the processor's skill tool in it.
func (w *worker) tools() []events.Tool {
	return []events.Tool{{Name: "read_file", Owner: "agent"}, client.SkillTool(w.owner)}
}

// preStep appends an agent.pre-step with the skill tool visible and returns
// the processor's Decision.
func (w *worker) preStep(ctx context.Context, step, cwd string, userText ...string) (events.Decision, error) {
	return w.c.PreStep(ctx, events.PreStep{Session: w.session, Step: step, Cwd: cwd, Tools: w.tools(), UserText: userText})
}

// call appends a tool.call.skill and returns the processor's ToolResult.
func (w *worker) call(ctx context.Context, id, cwd, name string) (events.ToolResult, error) {
	return w.c.CallSkill(ctx, events.SkillCall{Session: w.session, Call: id, Cwd: cwd, Args: events.SkillArgs{Name: name}})
}

// compact appends a context.compact keeping only events from retainFrom on
// visible to the model, and returns its sequence.
func (w *worker) compact(ctx context.Context, retainFrom uint64) (uint64, error) {
	return w.c.Compact(ctx, events.Compaction{Session: w.session, RetainFrom: retainFrom})
}

// publish appends v as an event of kind (one the processor ignores, such
// as a message) and returns its sequence.
func (w *worker) publish(ctx context.Context, kind events.Kind, v any) (uint64, error) {
	return w.c.Append(ctx, w.session, kind, v)
}
