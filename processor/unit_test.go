package processor

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

func TestFateOf(t *testing.T) {
	transient := errors.New("nats: timeout")
	rejected := &rejection{reason: reasonField, err: &events.FieldError{Field: "session", Problem: "missing"}}
	cases := []struct {
		name string
		err  error
		last bool
		want fate
	}{
		{"success", nil, false, fateAck},
		{"success at last delivery", nil, true, fateAck},
		{"undecodable", &rejection{reason: reasonUndecodable, err: events.ErrBadPayload}, false, fateTerm},
		{"invalid", rejected, false, fateTerm},
		{"rejected, reply failed too", errors.Join(rejected, transient), false, fateTerm},
		{"wrapped rejection", fmt.Errorf("pre-step: %w", rejected), false, fateTerm},
		{"panic", fmt.Errorf("%w: boom", errPanic), false, fateTerm},
		{"output evicted", fmt.Errorf("read output 7: %w: %w", errEvicted, errNoMessage), false, fateTerm},
		{"output missing from a replica", fmt.Errorf("read output 7: %w", errNoMessage), false, fateRetry},
		{"transient", transient, false, fateRetry},
		{"conflicts exhausted", fmt.Errorf("append: %w", errConflict), false, fateRetry},
		{"transient at last delivery", transient, true, fateTerm},
	}
	for _, c := range cases {
		if got := fateOf(c.err, c.last); got != c.want {
			t.Errorf("%s: fate %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDecodeReason(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("x: %w", events.ErrTooLarge), reasonTooLarge},
		{fmt.Errorf("x: %w", events.ErrUnsupportedVersion), reasonVersion},
		{&events.FieldError{Field: "step", Problem: "missing"}, reasonField},
		{events.ErrBadPayload, reasonUndecodable},
	}
	for _, c := range cases {
		if got := decodeReason(c.err); got != c.want {
			t.Errorf("%v: reason %q, want %q", c.err, got, c.want)
		}
	}
}

func TestConfig(t *testing.T) {
	c := Config{}.WithDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if c.Stream != "SESSIONS" || c.Prefix != "ev" || c.Consumer != "skillstream" || c.ToolOwner != "skillstream" ||
		c.DuplicateWindow < 2*time.Minute || c.Catalog != catalog.DefaultOptions() {
		t.Fatalf("defaults %+v", c)
	}
	bad := []struct {
		mutate  func(*Config)
		mention string
	}{
		{func(c *Config) { c.Stream = "a.b" }, "stream name"},
		{func(c *Config) { c.Prefix = "ev.*" }, "prefix"},
		{func(c *Config) { c.Prefix = "ev." }, "prefix"},
		{func(c *Config) { c.Consumer = "x y" }, "consumer"},
		{func(c *Config) { c.DuplicateWindow = time.Minute }, "duplicate window"},
		{func(c *Config) { c.MaxAge = time.Minute }, "exceeds max age"},
		{func(c *Config) { c.DuplicateWindow = DefaultMaxAge + time.Hour }, "exceeds max age 720h"},
		{func(c *Config) { c.MaxAge = -time.Hour }, "max age -1h0m0s is negative"},
		{func(c *Config) { c.MaxBytes = -5 }, "max bytes -5 is negative"},
		{func(c *Config) { c.MaxBytes, c.MaxMsgSize = 1<<20, 2<<20 }, "max message size 2097152 exceeds max bytes 1048576"},
		{func(c *Config) { c.MaxMsgSize = 64 << 10 }, "catalog max length 24000"},
		{func(c *Config) { c.MaxTriggerBytes = 100 }, "max trigger bytes 100: want 1024 to 1048576"},
		{func(c *Config) { c.MaxTriggerBytes = 2 << 20 }, "max trigger bytes 2097152"},
		{func(c *Config) { c.Replicas = 7 }, "replicas"},
		{func(c *Config) { c.Workers = -1 }, "workers"},
		{func(c *Config) { c.InflightBytes = -1 }, "in-flight bytes"},
		{func(c *Config) { c.AckWait = time.Millisecond }, "ack wait"},
		{func(c *Config) { c.Catalog = catalog.Options{DescriptionMaxLength: 2} }, "greater than or equal to 3"},
	}
	for _, b := range bad {
		c := Config{}.WithDefaults()
		b.mutate(&c)
		err := c.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), b.mention) {
			t.Errorf("%+v: error %v, want one mentioning %q", c, err, b.mention)
		}
	}
	// The consumer's back-off never has more entries than deliveries and
	// never undercuts AckWait (heartbeats are sent every AckWait/3).
	for _, md := range []int{1, 3, 10} {
		c := Config{MaxDeliver: md}.WithDefaults()
		bo := c.backOff()
		if len(bo) > md || len(bo) == 0 {
			t.Fatalf("max deliver %d: back-off %v", md, bo)
		}
		for _, d := range bo {
			if d < c.AckWait {
				t.Fatalf("back-off %v below ack wait %v", bo, c.AckWait)
			}
		}
	}
}

func TestOutputID(t *testing.T) {
	if got := outputID("s1", "step-7", events.KindCatalog); got != "s1:step-7:catalog.append" {
		t.Fatalf("%q", got)
	}
	// Ids unfit for a header are hashed, deterministically.
	a := outputID("s1", "step with spaces", events.KindToolResult)
	if a != outputID("s1", "step with spaces", events.KindToolResult) || strings.ContainsAny(a, " \r\n") ||
		!strings.HasPrefix(a, "s1:sha256-") || !strings.HasSuffix(a, ":tool.result") {
		t.Fatalf("%q", a)
	}
	if a == outputID("s1", "step with  spaces", events.KindToolResult) {
		t.Fatal("different ids hash alike")
	}
}

func TestValidInbox(t *testing.T) {
	for s, want := range map[string]bool{
		"_INBOX.abc.def": true, "reply": true, "": false, "a..b": false, ".a": false, "a.": false,
		"a.*": false, "a.>": false, "a b": false, "a\r\nb": false,
	} {
		if got := validInbox(s); got != want {
			t.Errorf("validInbox(%q) = %v", s, got)
		}
	}
}

func TestNakDelay(t *testing.T) {
	p := &Processor{cfg: Config{NakDelay: 100 * time.Millisecond, AckWait: time.Second}}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := p.nakDelay(uint64(i + 1)); got != w*time.Millisecond {
			t.Errorf("delivery %d: delay %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
}

// A view finds the newest event of a kind by its exact subject, whatever
// other subjects of the session (or of sessions and prefixes that share a
// beginning with it) were read, and the event put last for a subject wins.
func TestViewOf(t *testing.T) {
	rec := func(subject string, seq uint64) record { return record{Subject: subject, Seq: seq} }
	var v view
	for _, r := range []record{
		rec("ev.s1.agent.pre-step", 4),
		rec("ev.s1x.catalog.append", 5),
		rec("ev.s1.catalog.append.extra", 6),
		rec("eva.s1.catalog.append", 7),
		rec("ev.s1.tool.result", 8),
		rec("ev.s1.agent.pre-step", 9),
	} {
		v.put(r)
	}
	if len(v.newest) != 5 {
		t.Fatalf("view holds %d records, want 5 (one per subject)", len(v.newest))
	}
	for _, c := range []struct {
		k   events.Kind
		seq uint64 // 0: none
	}{
		{events.KindPreStep, 9},
		{events.KindToolResult, 8},
		{events.KindCatalog, 0},
		{events.KindCompaction, 0},
	} {
		got := v.of("ev", "s1", c.k)
		switch {
		case c.seq == 0 && got != nil:
			t.Errorf("of(%s) = %+v, want none", c.k, *got)
		case c.seq != 0 && (got == nil || got.Seq != c.seq):
			t.Errorf("of(%s) = %+v, want seq %d", c.k, got, c.seq)
		}
	}
	if got := v.of("ev", "s1x", events.KindCatalog); got == nil || got.Seq != 5 {
		t.Errorf("of(s1x catalog) = %+v, want seq 5", got)
	}
	for _, s := range []string{"", "ev", "ev.s1", "ev.s1.", "ev.s1.agent.pre-ste", "evXs1.agent.pre-step", "ev.s1Xagent.pre-step"} {
		if isSubject(s, "ev", "s1", events.KindPreStep) {
			t.Errorf("isSubject(%q) = true", s)
		}
	}
	if !isSubject(events.Subject("ev", "s1", events.KindPreStep), "ev", "s1", events.KindPreStep) {
		t.Error("isSubject of the subject itself = false")
	}
}

// BenchmarkView: what a pre-step does with the records of its read: keep
// the newest of each subject (in a view that outlives the read), then look
// up the kinds it decides on.
func BenchmarkView(b *testing.B) {
	recs := []record{
		{Subject: "ev.session-0001.catalog.append", Seq: 10},
		{Subject: "ev.session-0001.context.compact", Seq: 11},
		{Subject: "ev.session-0001.agent.pre-step", Seq: 12},
	}
	b.ReportAllocs()
	for b.Loop() {
		v := benchViewOf(recs)
		for _, k := range []events.Kind{events.KindPreStep, events.KindCatalog, events.KindCompaction} {
			if benchRecord = v.of("ev", "session-0001", k); benchRecord == nil {
				b.Fatal("not found")
			}
		}
	}
}

var benchRecord *record

//go:noinline
func benchViewOf(recs []record) view {
	v := view{newest: make([]record, 0, len(recs))}
	for _, r := range recs {
		v.put(r)
		v.last = max(v.last, r.Seq)
	}
	return v
}
