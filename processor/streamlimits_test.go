package processor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// prepare builds a processor with cfg on e's server and runs Prepare.
func (e *env) prepare(cfg Config) (*Processor, *records, error) {
	e.t.Helper()
	logs := &records{next: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})}
	p, err := New(e.srv.Connect(), e.registry, cfg, WithLogger(slog.New(logs)))
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	return p, logs, p.Prepare(ctx)
}

// stream is the session stream's config as the server has it.
func (e *env) stream() jetstream.StreamConfig {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	st, err := e.js.Stream(ctx, DefaultStream)
	if err != nil {
		e.t.Fatal(err)
	}
	return st.CachedInfo().Config
}

const unboundedWarning = "the session stream has no byte or age limit"

// TestStreamLimits: a stream the processor creates gets the configured
// limits, or the defaults; an existing stream keeps its own unless a limit
// is configured (then applied, NoLimit lifting it), so that upgrading the
// processor never shrinks a stream. StreamLimits says which, and a stream
// left without a byte or age bound is warned about.
func TestStreamLimits(t *testing.T) {
	const gib = 1 << 30
	bounded := jetstream.StreamConfig{Name: DefaultStream, Subjects: []string{"ev.>"}, MaxBytes: gib, MaxAge: 48 * time.Hour}
	unbounded := jetstream.StreamConfig{Name: DefaultStream, Subjects: []string{"ev.>"}}
	tests := []struct {
		name  string
		have  *jetstream.StreamConfig // nil: no stream yet
		cfg   Config
		want  StreamLimits
		warns bool
	}{
		{"created with the defaults", nil, Config{},
			StreamLimits{DefaultMaxAge, DefaultMaxBytes, DefaultMaxMsgSize, LimitsCreated}, false},
		{"created as configured", nil, Config{MaxAge: time.Hour, MaxBytes: 2 * gib, MaxMsgSize: 512 << 10},
			StreamLimits{time.Hour, 2 * gib, 512 << 10, LimitsCreated}, false},
		{"created without limits", nil, Config{MaxAge: NoLimit, MaxBytes: NoLimit, MaxMsgSize: NoLimit},
			StreamLimits{0, -1, -1, LimitsCreated}, true},
		{"an existing stream's kept", &bounded, Config{},
			StreamLimits{48 * time.Hour, gib, -1, LimitsKept}, false},
		{"an unbounded existing stream kept, and warned about", &unbounded, Config{},
			StreamLimits{0, -1, -1, LimitsKept}, true},
		{"configured limits applied", &unbounded, Config{MaxAge: 24 * time.Hour, MaxBytes: 2 * gib, MaxMsgSize: 512 << 10},
			StreamLimits{24 * time.Hour, 2 * gib, 512 << 10, LimitsApplied}, false},
		{"one configured, the others kept", &bounded, Config{MaxBytes: 3 * gib},
			StreamLimits{48 * time.Hour, 3 * gib, -1, LimitsApplied}, false},
		{"configured as the stream has them", &bounded, Config{MaxBytes: gib, MaxAge: 48 * time.Hour},
			StreamLimits{48 * time.Hour, gib, -1, LimitsKept}, false},
		{"lifted", &bounded, Config{MaxAge: NoLimit, MaxBytes: NoLimit},
			StreamLimits{0, -1, -1, LimitsApplied}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.have != nil {
				ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
				defer cancel()
				if _, err := e.js.CreateStream(ctx, *tt.have); err != nil {
					t.Fatal(err)
				}
			}
			p, logs, err := e.prepare(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.StreamLimits(); got != tt.want {
				t.Errorf("StreamLimits() = %+v, want %+v", got, tt.want)
			}
			sc := e.stream()
			if got := (StreamLimits{sc.MaxAge, max(sc.MaxBytes, -1), max(sc.MaxMsgSize, -1), tt.want.Provisioned}); got != tt.want {
				t.Errorf("stream has %+v, want %+v", got, tt.want)
			}
			if tt.have == nil && sc.Discard != jetstream.DiscardOld {
				t.Errorf("discard policy %v, want old", sc.Discard)
			}
			if warned := len(logs.matching(slog.LevelWarn, unboundedWarning)) > 0; warned != tt.warns {
				t.Errorf("warned of an unbounded stream: %v, want %v", warned, tt.warns)
			}
		})
	}
}

// TestStreamLimitsInfraManaged: with provisioning off the stream's limits
// are the infrastructure's: StreamLimits reports them as found, and limits
// configured anyway are not applied but warned about.
func TestStreamLimitsInfraManaged(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	sc := Config{}.WithDefaults().streamConfig()
	sc.MaxBytes, sc.MaxAge, sc.MaxMsgSize = 1<<30, 72*time.Hour, 0
	if _, err := e.js.CreateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.CreateConsumer(ctx, DefaultStream, Config{}.WithDefaults().consumerConfig()); err != nil {
		t.Fatal(err)
	}
	p, logs, err := e.prepare(Config{NoProvision: true, MaxBytes: 5 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.StreamLimits(), (StreamLimits{72 * time.Hour, 1 << 30, -1, LimitsInfraManaged}); got != want {
		t.Errorf("StreamLimits() = %+v, want %+v", got, want)
	}
	if got := e.stream().MaxBytes; got != 1<<30 {
		t.Errorf("max bytes %d: changed with provisioning off", got)
	}
	if len(logs.matching(slog.LevelWarn, "stream limits configured but not applied")) != 1 {
		t.Error("configured limits not applied, and not warned about")
	}
}

// TestSessionAfterItsCatalogWasDiscarded: a stream at its byte limit
// discards its oldest messages, of any session. A session whose catalog
// went that way is given its catalog again at its next pre-step, as a new
// session would be, and the stream stays within its limit.
func TestSessionAfterItsCatalogWasDiscarded(t *testing.T) {
	const maxBytes, filler = 256 << 10, 8 << 10
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start(func(c *Config, _ *options) {
		c.MaxBytes, c.MaxMsgSize = maxBytes, 32<<10
		c.Catalog = catalog.DefaultOptions()
		c.Catalog.MaxLength, c.Catalog.MaxSkillBytes = 1000, 4096
	})
	w := e.worker()
	e.expect(w.preStep(events.PreStep{Session: "old", Step: "1", Cwd: e.cwd, Tools: ourTool()}), events.OutcomeAppended, 1)
	e.expect(w.preStep(events.PreStep{Session: "old", Step: "2", Cwd: e.cwd, Tools: ourTool()}), events.OutcomeUnchanged, 1)

	// Other sessions' events push the stream past its limit, twice over.
	data := []byte(`{"v":1,"text":"` + strings.Repeat("x", filler) + `"}`)
	for i := range 2 * maxBytes / filler {
		w.publish(fmt.Sprintf("busy%d", i%7), "message.user", nil, data)
	}
	if n := len(e.sessionLog("old")); n != 0 {
		t.Fatalf("%d events of the old session left; want all discarded", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	st, err := e.js.Stream(ctx, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Bytes > maxBytes {
		t.Errorf("stream holds %d bytes, over its limit of %d", info.State.Bytes, maxBytes)
	}

	d := w.preStep(events.PreStep{Session: "old", Step: "3", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeAppended, 1)
	if d.Catalog == nil || d.Catalog.Source.Update != string(catalog.UpdateInitial) {
		t.Errorf("catalog after the discard: %+v, want an initial one", d.Catalog)
	}
}

// TestStreamLimitsOverTheServersStorage: a server whose JetStream storage
// cannot hold the stream's max bytes refuses the stream; Prepare says so
// and what to do, and a smaller limit is taken.
func TestStreamLimitsOverTheServersStorage(t *testing.T) {
	e := newEnv(t, func(o *server.Options) { o.JetStreamMaxStore = 1 << 30 })
	_, _, err := e.prepare(Config{})
	if err == nil || !strings.Contains(err.Error(), "insufficient storage resources") ||
		!strings.Contains(err.Error(), "max bytes, 10737418240, in its JetStream storage: configure a smaller max bytes") {
		t.Fatalf("Prepare with the default max bytes on a 1 GiB store: %v", err)
	}
	p, _, err := e.prepare(Config{MaxBytes: 512 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.StreamLimits(); got.MaxBytes != 512<<20 || got.Provisioned != LimitsCreated {
		t.Errorf("StreamLimits() = %+v", got)
	}
}
