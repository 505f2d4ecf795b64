package processor

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

func TestProvisionCreates(t *testing.T) {
	e := newEnv(t)
	e.start(func(c *Config, _ *options) { c.MaxAge = time.Hour; c.MaxDeliver = 4; c.AckWait = 3 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	st, err := e.js.Stream(ctx, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	if !slices.Equal(sc.Subjects, []string{"ev.>"}) || sc.Retention != jetstream.LimitsPolicy || sc.Storage != jetstream.FileStorage ||
		!sc.AllowDirect || sc.Duplicates < 2*time.Minute || sc.MaxAge != time.Hour || sc.Replicas != 1 {
		t.Fatalf("stream config %+v", sc)
	}
	cons, err := e.js.Consumer(ctx, DefaultStream, DefaultConsumer)
	if err != nil {
		t.Fatal(err)
	}
	cc := cons.CachedInfo().Config
	if !slices.Equal(cc.FilterSubjects, events.TriggerFilters("ev")) || cc.AckPolicy != jetstream.AckExplicitPolicy ||
		cc.MaxDeliver != 4 || cc.AckWait != 3*time.Second || len(cc.BackOff) == 0 || cc.Durable != DefaultConsumer {
		t.Fatalf("consumer config %+v", cc)
	}
}

func TestProvisionKeepsExistingStreamSettings(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	// An operator's stream with another subject and no direct gets.
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: DefaultStream, Subjects: []string{"audit.>"}, MaxMsgs: 1000000, MaxAge: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	e.start()
	st, err := e.js.Stream(ctx, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	if !slices.Equal(sc.Subjects, []string{"audit.>", "ev.>"}) || !sc.AllowDirect || sc.MaxMsgs != 1000000 ||
		sc.Duplicates < 2*time.Minute || sc.MaxAge != 48*time.Hour {
		t.Fatalf("merged stream config %+v", sc)
	}
}

func TestNoProvision(t *testing.T) {
	e := newEnv(t)
	run := func(cfg Config) error {
		t.Helper()
		cfg.NoProvision = true
		p, err := New(e.srv.Connect(), e.registry, cfg, WithLogger(quietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		return p.Run(ctx)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	err := run(Config{})
	if !errors.Is(err, ErrNotProvisioned) || !strings.Contains(err.Error(), "stream SESSIONS does not exist") {
		t.Fatalf("missing stream: %v", err)
	}
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: DefaultStream, Subjects: []string{"ev.>"}}); err != nil {
		t.Fatal(err)
	}
	err = run(Config{})
	if !errors.Is(err, ErrNotProvisioned) || !strings.Contains(err.Error(), "allow direct") {
		t.Fatalf("stream without direct gets: %v", err)
	}
	if _, err := e.js.UpdateStream(ctx, jetstream.StreamConfig{Name: DefaultStream, Subjects: []string{"ev.>"}, AllowDirect: true, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	err = run(Config{})
	if !errors.Is(err, ErrNotProvisioned) || !strings.Contains(err.Error(), "consumer skillstream") {
		t.Fatalf("missing consumer: %v", err)
	}
	if _, err := e.js.CreateConsumer(ctx, DefaultStream, jetstream.ConsumerConfig{Durable: DefaultConsumer, FilterSubject: "ev.*.agent.pre-step", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	err = run(Config{})
	if !errors.Is(err, ErrNotProvisioned) || !strings.Contains(err.Error(), `"ev.*.tool.call.skill"`) {
		t.Fatalf("consumer missing a filter: %v", err)
	}
	// Provisioned by the infrastructure as required: it runs (until ctx ends).
	if _, err := e.js.UpdateConsumer(ctx, DefaultStream, jetstream.ConsumerConfig{Durable: DefaultConsumer, FilterSubjects: events.TriggerFilters("ev"), AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	p, err := New(e.srv.Connect(), e.registry, Config{NoProvision: true}, WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx) }()
	w := e.worker()
	d := w.preStep(events.PreStep{Session: "infra", Step: "1", Tools: ourTool()})
	if d.Outcome != events.OutcomeEmpty {
		t.Fatalf("%+v", d)
	}
	rcancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestToolDefinitionService(t *testing.T) {
	e := newEnv(t)
	p := e.start()
	nc := e.srv.Connect()

	// JSON by default.
	m, err := nc.Request(events.ToolDefinitionSubject, nil, waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if ct := m.Header.Get(events.HeaderContentType); ct != events.ContentTypeJSON {
		t.Fatalf("Content-Type %q", ct)
	}
	want := `{"name":"skill","description":"` + catalog.ToolDescription + `","parameters":` + catalog.ToolParameters + `}`
	if string(m.Data) != want {
		t.Fatalf("definition:\n%s\nwant\n%s", m.Data, want)
	}

	// Msgpack when asked.
	req := &nats.Msg{Subject: events.ToolDefinitionSubject, Header: nats.Header{events.HeaderContentType: []string{events.ContentTypeMsgpack}}}
	m, err = nc.RequestMsg(req, waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	def, err := events.DecodeToolDefinition(events.Msgpack, m.Data)
	if err != nil {
		t.Fatal(err)
	}
	if def.Name != catalog.ToolName || def.Description != catalog.ToolDescription || string(def.Parameters) != catalog.ToolParameters {
		t.Fatalf("msgpack definition %+v", def)
	}

	// Discoverable as a micro service (what `nats micro ls` asks).
	var info micro.Info
	requestJSON(t, nc, "$SRV.INFO."+ServiceName, &info)
	// Three endpoints: the tool definition and every tool's definitions
	// (shared by every member), and this member's view (view.go).
	if info.Name != ServiceName || len(info.Endpoints) != 3 || info.Endpoints[0].Subject != events.ToolDefinitionSubject ||
		info.Endpoints[1].Subject != events.ToolDefinitionsSubject ||
		info.Endpoints[2].Subject != events.ViewSubject(p.Config().Instance) || info.Metadata["instance"] != p.Config().Instance {
		t.Fatalf("service info %+v", info)
	}
	// The two requests above, and the processor's own at start (see Run),
	// which the definition requests metric leaves out. The micro library
	// counts a request after its handler has answered, so the last count
	// may trail the answer a moment: poll until the counts are as wanted.
	want3 := [3]int{3, 1, 1}
	var got [3]int
	deadline := time.Now().Add(waitTimeout)
	for {
		var st micro.Stats
		requestJSON(t, nc, "$SRV.STATS."+ServiceName, &st)
		if len(st.Endpoints) != 3 {
			t.Fatalf("stats list %d endpoints, want 3", len(st.Endpoints))
		}
		for i, ep := range st.Endpoints {
			got[i] = ep.NumRequests
			if got[i] > want3[i] {
				t.Fatalf("endpoint %s counted %d requests, want %d", ep.Subject, got[i], want3[i])
			}
		}
		if got == want3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("requests counted per endpoint %v, want %v", got, want3)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := counter(t, p.m.definitionReq); n != 2 {
		t.Errorf("tool definition requests counted: %v, want 2", n)
	}
}

// requestJSON sends an empty request to subject and decodes the JSON
// answer into v.
func requestJSON(t *testing.T, nc *nats.Conn, subject string, v any) {
	t.Helper()
	m, err := nc.Request(subject, nil, waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(m.Data, v); err != nil {
		t.Fatalf("answer on %s: %v", subject, err)
	}
}
