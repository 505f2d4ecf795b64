package usage_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor/usage"
)

func sessionStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv := natstest.Start(t)
	if _, err := srv.JS.CreateStream(context.Background(), jetstream.StreamConfig{Name: "SESSIONS", Subjects: []string{"ev.>"}}); err != nil {
		t.Fatal(err)
	}
	return srv.JS
}

func publishLoad(t *testing.T, js jetstream.JetStream, sid, name string) {
	t.Helper()
	b, err := events.Encode(events.Msgpack, events.ToolResult{V: 1, Session: sid, Call: "c", Text: "t",
		Value: &events.SkillValue{Name: name, Provider: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), events.Subject("ev", sid, events.KindToolResult), b); err != nil {
		t.Fatal(err)
	}
}

// Progress counts every record and ends at 0 remaining; triggers are not
// read at all.
func TestReadProgressAndTriggersSkipped(t *testing.T) {
	js := sessionStream(t)
	for i := range 50 {
		b, _ := events.Encode(events.Msgpack, events.PreStep{V: 1, Session: "s", Step: strconv.Itoa(i), Tools: []events.Tool{}})
		if _, err := js.Publish(context.Background(), "ev.s.agent.pre-step", b); err != nil {
			t.Fatal(err)
		}
		publishLoad(t, js, "s", "a")
	}
	var calls int
	var last uint64 = 1
	rep, err := usage.Read(context.Background(), js, usage.Options{Stream: "SESSIONS", Progress: func(read int, remaining uint64) {
		calls++
		last = remaining
		if read != calls {
			t.Errorf("progress read %d at call %d", read, calls)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 50 || calls != 50 || last != 0 || len(rep.Skills) != 1 || rep.Skills[0].Loads != 50 {
		t.Fatalf("report %+v, %d progress calls ending at %d; want 50 loads of a", rep, calls, last)
	}
}

// A window with nothing in it (a start in the future, an empty stream) is
// an empty report, at once.
func TestReadEmptyWindow(t *testing.T) {
	js := sessionStream(t)
	rep, err := usage.Read(context.Background(), js, usage.Options{Stream: "SESSIONS"})
	if err != nil || rep.Records != 0 || len(rep.Skills) != 0 || rep.ListedNeverUsed == nil {
		t.Fatalf("empty stream: %+v, %v", rep, err)
	}
	publishLoad(t, js, "s", "a")
	rep, err = usage.Read(context.Background(), js, usage.Options{Stream: "SESSIONS", Since: time.Now().Add(time.Hour)})
	if err != nil || rep.Records != 0 {
		t.Fatalf("future window: %+v, %v", rep, err)
	}
}

// A cancelled read stops with the context's error rather than stalling.
func TestReadCancelled(t *testing.T) {
	js := sessionStream(t)
	for range 20 {
		publishLoad(t, js, "s", "a")
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err := usage.Read(ctx, js, usage.Options{Stream: "SESSIONS", Progress: func(int, uint64) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v, want context.Canceled", err)
	}
}

func TestReadBadOptions(t *testing.T) {
	js := sessionStream(t)
	for _, o := range []usage.Options{
		{Stream: "SESSIONS", Prefix: "bad..prefix"},
		{Stream: "SESSIONS", Session: "a.b"},
		{Stream: "NOPE"},
	} {
		if _, err := usage.Read(context.Background(), js, o); err == nil {
			t.Errorf("Read(%+v) succeeded", o)
		}
	}
}
