package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// The baseline is the floor a processor cannot beat on the same server: for
// every trigger, the bare JetStream work the protocol implies, with no
// decoding and no decision logic:
//
//   - the worker appends the trigger (same load generator as the processor phase);
//   - a durable pull consumer, shared like the processor's, delivers it;
//   - pre-step: two Direct Get last_by_subj reads (newest catalog, newest
//     compaction); skill call and skill search: one (newest tool result);
//   - one append with Nats-Expected-Last-Subject-Sequence checked against the
//     session, where the workload expects one (every skill call and search; a pre-step
//     when the load generator marked it with AppendHeader: the first of
//     a session, the first after a catalog change);
//   - one core NATS reply: an answer of realistic size, encoded for the
//     trigger (its session, id and sequence, which the worker checks);
//   - the ack.
//
// It runs with the processor's worker count, on its own stream.

// Baseline stream names; the run id keeps concurrent runs apart.
const (
	BaselineStream = "SKILLSTREAM_BENCH_BASELINE"
	BaselinePrefix = "skillstream-bench-baseline"
)

// benchBlobs are the pre-encoded outputs of the baseline, and the answers
// it encodes per trigger: a worker accepts an answer only when it names its
// session, step or call and trigger sequence, so those are filled in for
// each (the step or call id peeked from the trigger's payload, without
// decoding the rest).
type benchBlobs struct {
	catalog []byte // stored catalog (msgpack)
	result  []byte // stored tool result (msgpack)
	search  []byte // stored search result (msgpack)
	cat     events.Catalog
	res     events.ToolResult
	found   events.ToolResult // a search's result
}

// answer encodes the answer to the trigger of kind on session sid with
// id and stream sequence seq; appended says whether a catalog was
// appended for a pre-step.
func (b *benchBlobs) answer(enc events.Encoding, kind events.Kind, sid, id string, seq uint64, appended bool) ([]byte, error) {
	if kind == events.KindSkillCall || kind == events.KindSkillSearch {
		r := b.res
		if kind == events.KindSkillSearch {
			r = b.found
		}
		r.Session, r.Call, r.TriggerSeq = sid, id, seq
		return events.Encode(enc, r)
	}
	d := events.Decision{V: events.Version, Session: sid, Step: id, TriggerSeq: seq, Outcome: events.OutcomeUnchanged}
	if appended {
		d.Outcome, d.Catalog = events.OutcomeAppended, &b.cat
	}
	return events.Encode(enc, d)
}

// idOf is the step or call id of a trigger of kind, read from its payload
// (a Msg-Id tells nothing of it).
func idOf(kind events.Kind, enc events.Encoding, data []byte) string {
	field := "call"
	if kind == events.KindPreStep {
		field = "step"
	}
	id, _ := events.PeekString(enc, data, field)
	return id
}

// newBenchBlobs renders a real catalog of the given skills and a real tool
// result, once, so that the baseline moves as many bytes as the processor.
func newBenchBlobs(owner string, skills []catalog.Summary, body string, opts catalog.Options) (*benchBlobs, error) {
	view := catalog.Prepare(catalog.Snapshot{Skills: skills, Complete: true}, opts)
	entries := view.Entries
	cat := events.Catalog{
		V: events.Version, Session: "session", Step: "step", ID: "session:step:catalog.append", Role: "user",
		Text: catalog.RenderList(catalog.UpdateInitial, entries, view.Omitted),
		Source: events.CatalogSource{
			Kind: events.SourceKindCatalog, Producer: owner, Update: string(catalog.UpdateInitial),
			Entries: make([]events.Entry, len(entries)), Digest: view.Digest, Omitted: view.Omitted,
		},
	}
	for i, e := range entries {
		cat.Source.Entries[i] = events.Entry{Name: e.Name, Description: e.Description}
	}
	res := events.ToolResult{V: events.Version, Session: "session", Call: "call", TriggerSeq: 1, Text: body,
		Value: &events.SkillValue{Name: "skill", Provider: "agentskills", Content: body}}
	// A search's result: a page of the default eight matches.
	page := catalog.SearchValue{Query: "releases and reviews of area 1", Total: len(entries), Results: entries[:min(len(entries), catalog.DefaultSearchLimit)]}
	found := events.ToolResult{V: events.Version, Session: "session", Call: "call", TriggerSeq: 1,
		Text:   catalog.SearchResult{Value: &page}.Text(),
		Search: &events.SearchValue{Query: page.Query, Total: page.Total, Results: make([]events.Entry, len(page.Results))}}
	for i, e := range page.Results {
		found.Search.Results[i] = events.Entry{Name: e.Name, Description: e.Description}
	}
	b := &benchBlobs{cat: cat, res: res, found: found}
	var err error
	if b.catalog, err = events.Encode(events.Msgpack, cat); err != nil {
		return nil, err
	}
	if b.result, err = events.Encode(events.Msgpack, res); err != nil {
		return nil, err
	}
	if b.search, err = events.Encode(events.Msgpack, found); err != nil {
		return nil, err
	}
	return b, nil
}

// benchBaseline is the hand-written minimal consumer.
type benchBaseline struct {
	nc        *nats.Conn
	js        jetstream.JetStream
	stream    string
	prefix    string
	workers   int
	blobs     *benchBlobs
	api       string // "$JS.API.DIRECT.GET.<stream>."
	conflicts atomic.Int64
	failures  atomic.Int64
	mu        sync.Mutex
	firstErr  error
}

// startBenchBaseline creates the baseline stream and consumer (settings as
// the processor's) and starts consuming. stop ends it and deletes the stream.
func startBenchBaseline(ctx context.Context, nc *nats.Conn, stream, prefix string, workers int, ackWait time.Duration, blobs *benchBlobs) (*benchBaseline, func(), error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, nil, fmt.Errorf("jetstream context: %w", err)
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{
		Name:        stream,
		Description: "skillstream bench baseline (deleted after the run)",
		Subjects:    []string{prefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		AllowDirect: true,
		Duplicates:  2 * time.Minute,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("create baseline stream %s: %w", stream, err)
	}
	deleteStream := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = js.DeleteStream(dctx, stream)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable:        "baseline",
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        ackWait,
		MaxDeliver:     5,
		FilterSubjects: events.TriggerFilters(prefix),
	})
	if err != nil {
		deleteStream()
		return nil, nil, fmt.Errorf("create baseline consumer: %w", err)
	}
	b := &benchBaseline{nc: nc, js: js, stream: stream, prefix: prefix, workers: workers, blobs: blobs,
		api: "$JS.API.DIRECT.GET." + stream + "."}
	var wg sync.WaitGroup
	slots := make(chan struct{}, workers)
	work := context.WithoutCancel(ctx)
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if err := b.handle(work, msg); err != nil {
				b.failures.Add(1)
				b.mu.Lock()
				if b.firstErr == nil {
					b.firstErr = err
				}
				b.mu.Unlock()
				_ = msg.Nak()
				return
			}
			_ = msg.Ack()
		}()
	}, jetstream.PullMaxMessages(workers))
	if err != nil {
		deleteStream()
		return nil, nil, fmt.Errorf("consume baseline: %w", err)
	}
	stop := func() {
		cc.Drain()
		<-cc.Closed()
		wg.Wait()
		deleteStream()
	}
	return b, stop, nil
}

// err returns the first handling failure, if any.
func (b *benchBaseline) err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.firstErr
}

// handle does one trigger's bare work.
func (b *benchBaseline) handle(ctx context.Context, msg jetstream.Msg) error {
	meta, err := msg.Metadata()
	if err != nil {
		return err
	}
	sid, kind, err := events.ParseSubject(b.prefix, msg.Subject())
	if err != nil {
		return err
	}
	h := msg.Headers()
	enc, err := events.EncodingOf(h.Get(events.HeaderContentType))
	if err != nil {
		return err
	}
	var stored []byte
	switch kind {
	case events.KindPreStep:
		if err := b.last(ctx, events.Subject(b.prefix, sid, events.KindCatalog)); err != nil {
			return err
		}
		if err := b.last(ctx, events.Subject(b.prefix, sid, events.KindCompaction)); err != nil {
			return err
		}
		if h.Get(AppendHeader) != "" {
			stored = b.blobs.catalog
		}
	case events.KindSkillCall, events.KindSkillSearch:
		if err := b.last(ctx, events.Subject(b.prefix, sid, events.KindToolResult)); err != nil {
			return err
		}
		stored = b.blobs.result
		if kind == events.KindSkillSearch {
			stored = b.blobs.search
		}
	default:
		return nil
	}
	if stored != nil {
		out := events.KindCatalog
		if kind != events.KindPreStep {
			out = events.KindToolResult
		}
		m := &nats.Msg{
			Subject: events.Subject(b.prefix, sid, out),
			Header: nats.Header{
				events.HeaderContentType:                []string{events.ContentTypeMsgpack},
				events.HeaderCausationSeq:               []string{strconv.FormatUint(meta.Sequence.Stream, 10)},
				events.HeaderMsgID:                      []string{h.Get(events.HeaderMsgID) + ":out"},
				events.HeaderExpectedLastSubjSeq:        []string{strconv.FormatUint(meta.Sequence.Stream, 10)},
				events.HeaderExpectedLastSubjSeqSubject: []string{events.SessionWildcard(b.prefix, sid)},
			},
			Data: stored,
		}
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := b.js.PublishMsg(actx, m)
		cancel()
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			b.conflicts.Add(1) // a session has one trigger in flight: should not happen
		} else if err != nil {
			return fmt.Errorf("baseline append: %w", err)
		}
	}
	if inbox := h.Get(events.HeaderReplyInbox); inbox != "" {
		answer, err := b.blobs.answer(enc, kind, sid, idOf(kind, enc, msg.Data()), meta.Sequence.Stream, stored != nil)
		if err != nil {
			return fmt.Errorf("baseline answer: %w", err)
		}
		r := &nats.Msg{Subject: inbox, Header: nats.Header{events.HeaderContentType: []string{enc.ContentType()}}, Data: answer}
		if err := b.nc.PublishMsg(r); err != nil {
			return fmt.Errorf("baseline reply: %w", err)
		}
	}
	return nil
}

// last is one Direct Get last_by_subj read; "no message" is an answer.
func (b *benchBaseline) last(ctx context.Context, subject string) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := b.nc.RequestWithContext(rctx, b.api+subject, nil)
	if err != nil {
		return fmt.Errorf("baseline read %s: %w", subject, err)
	}
	switch m.Header.Get("Status") {
	case "", "404":
		return nil
	default:
		return fmt.Errorf("baseline read %s: status %s %s", subject, m.Header.Get("Status"), m.Header.Get("Description"))
	}
}
