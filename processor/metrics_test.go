package processor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skillstream/skillstream/events"
)

// series returns the value of every series of the named metric family, by
// its labels as "k=v,k=v".
func series(t testing.TB, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out[strings.Join(ls, ",")] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return -1
}

// Every counter is there, at 0, before the first trigger.
func TestMetricsPresentFromTheStart(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := newMetrics(reg); err != nil {
		t.Fatal(err)
	}
	triggers := series(t, reg, "skillstream_triggers_total")
	for _, want := range []string{"kind=pre-step,outcome=appended", "kind=pre-step,outcome=incomplete", "kind=pre-step,outcome=rejected",
		"kind=skill-call,outcome=ok", "kind=skill-call,outcome=unknown", "kind=skill-call,outcome=bad_request",
		"kind=skill-search,outcome=found", "kind=skill-search,outcome=no_match", "kind=skill-search,outcome=bad_request"} {
		if v, ok := triggers[want]; !ok || v != 0 {
			t.Errorf("triggers_total{%s} = %v (present %v), want 0", want, v, ok)
		}
	}
	if got := len(triggers); got != len(preStepOutcomes)+len(skillCallOutcomes)+len(searchOutcomes) {
		t.Errorf("%d trigger series, want %d", got, len(preStepOutcomes)+len(skillCallOutcomes)+len(searchOutcomes))
	}
	if s := series(t, reg, "skillstream_skill_searches_total"); len(s) != len(searchOutcomes) || s["outcome=found"] != 0 || s["outcome=no_match"] != 0 {
		t.Errorf("skill_searches_total = %v, want every outcome at 0", s)
	}
	if s := series(t, reg, "skillstream_pull_restarts_total"); len(s) != len(pullRestartReasons) || s["reason=consumer_gone"] != 0 || s["reason=no_heartbeat"] != 0 {
		t.Errorf("pull_restarts_total = %v, want every reason at 0", s)
	}
	rejects := series(t, reg, "skillstream_rejects_total")
	for _, r := range []string{reasonInbox, reasonCwd, reasonField, reasonUndecodable} {
		if v, ok := rejects["reason="+r]; !ok || v != 0 {
			t.Errorf("rejects_total{reason=%s} = %v (present %v), want 0", r, v, ok)
		}
	}
	for _, name := range []string{"skillstream_redeliveries_total", "skillstream_duplicate_triggers_total",
		"skillstream_dead_letters_total", "skillstream_transient_failures_total"} {
		if s := series(t, reg, name); len(s) != 3 || s["kind=pre-step"] != 0 || s["kind=skill-call"] != 0 || s["kind=skill-search"] != 0 {
			t.Errorf("%s = %v, want every kind at 0", name, s)
		}
	}
	for _, name := range []string{"skillstream_append_conflicts_total", "skillstream_panics_total", "skillstream_handed_back_total",
		"skillstream_triggers_in_flight", "skillstream_consumer_pending", "skillstream_consumer_ack_pending"} {
		if s := series(t, reg, name); len(s) != 1 || s[""] != 0 {
			t.Errorf("%s = %v, want one series at 0", name, s)
		}
	}
}

// The in-flight and consumer gauges follow the work: a trigger stuck in
// its provider is in flight, the next one waits delivered and
// unacknowledged, a third is not delivered yet.
func TestMetricsGauges(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	cfg := e.cfg
	cfg.Workers = 1
	release := make(chan struct{})
	p, err := New(e.srv.Connect(), stuck{Skills: e.registry, release: release}, cfg, WithLogger(quietLogger()), WithRegisterer(e.reg))
	if err != nil {
		t.Fatal(err)
	}
	p.statsPeriod = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	defer close(release)
	<-p.Ready()
	w := e.worker()
	for i := range 5 {
		w.publish("g", events.KindPreStep, events.PreStep{V: 1, Session: "g", Step: fmt.Sprint(i), Cwd: e.cwd, Tools: ourTool()}, nil)
	}
	poll(t, func() error {
		inflight := series(t, e.reg, "skillstream_triggers_in_flight")[""]
		pending := series(t, e.reg, "skillstream_consumer_pending")[""]
		acks := series(t, e.reg, "skillstream_consumer_ack_pending")[""]
		// One handled, one or two delivered ahead of the only worker,
		// the rest in the stream.
		if inflight != 1 || acks < 1 || pending < 1 || pending+acks != 5 {
			return fmt.Errorf("in flight %v, pending %v, ack pending %v", inflight, pending, acks)
		}
		return nil
	})
}

func TestServiceVersion(t *testing.T) {
	for v, want := range map[string]string{
		"v1.4.2": "1.4.2", "v0.0.0-20261202194116-0123abcdef01": "0.0.0-20261202194116-0123abcdef01",
		"v1.2.3+dirty": "1.2.3+dirty", "(devel)": "0.0.0-devel", "": "0.0.0-devel",
	} {
		if got := serviceVersion(v); got != want {
			t.Errorf("serviceVersion(%q) = %q, want %q", v, got, want)
		}
	}
	// The running service reports the binary's version.
	e := newEnv(t)
	e.start(func(_ *Config, o *options) { o.version = "v1.4.2" })
	msg, err := e.srv.Conn.Request("$SRV.INFO."+ServiceName, nil, waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	if info.Version != "1.4.2" || info.Metadata["protocol"] != ProtocolVersion || info.Metadata["build"] != "v1.4.2" {
		t.Fatalf("service info %+v", info)
	}
}
