package partition_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor/partition"
)

// Check against a real server's streams: the count of partition streams
// it holds passes; fewer, more, none, and no --partitions against
// partitions alone are each refused naming the count to give; once the
// whole stream exists too, no partitions is fine.
func TestCheck(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	for _, p := range partition.Places("SESSIONS", "ev", 3) {
		if _, err := srv.JS.CreateStream(ctx, jetstream.StreamConfig{Name: p.Stream, Subjects: []string{events.StreamSubjects(p.Prefix)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := partition.Check(ctx, srv.JS, "SESSIONS", 3); err != nil {
		t.Errorf("3 of 3: %v", err)
	}
	for n, want := range map[int]string{
		0: "stream SESSIONS does not exist, but its partitions SESSIONS-0 to SESSIONS-2 do: give --partitions 3",
		2: "--partitions 2, but stream SESSIONS-2 exists too: the server holds 3 partitions: give --partitions 3",
		5: "--partitions 5: stream SESSIONS-3 does not exist (the server holds 3 partitions (SESSIONS-0 to SESSIONS-2): give --partitions 3)",
	} {
		err := partition.Check(ctx, srv.JS, "SESSIONS", n)
		if !errors.Is(err, partition.ErrMismatch) || !strings.Contains(err.Error(), want) {
			t.Errorf("%d of 3: %v, want %q", n, err, want)
		}
	}
	if err := partition.Check(ctx, srv.JS, "OTHER", 2); err == nil || !strings.Contains(err.Error(), "no partition stream of OTHER exists") {
		t.Errorf("no partitions at all: %v", err)
	}
	if _, err := srv.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "SESSIONS", Subjects: []string{"ev.>"}}); err != nil {
		t.Fatal(err)
	}
	if err := partition.Check(ctx, srv.JS, "SESSIONS", 0); err != nil {
		t.Errorf("no partitions, with the whole stream: %v", err)
	}

	// Elsewhere: a session kept in the whole stream, read as a
	// partitioned one, is named there.
	if _, err := srv.JS.Publish(ctx, events.Subject("ev", "old", events.KindPreStep), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	at := partition.Of("SESSIONS", "ev", events.LayoutFlat, "old", 3)
	err := partition.Elsewhere(ctx, srv.JS, "SESSIONS", "ev", events.LayoutFlat, "old", 3, at)
	if want := "session old is not in stream " + at.Stream + ", where --partitions 3 places it, but in stream SESSIONS: a session kept before the sessions were partitioned"; !errors.Is(err, partition.ErrMismatch) || !strings.Contains(err.Error(), want) {
		t.Errorf("elsewhere: %v, want %q", err, want)
	}
	if err := partition.Elsewhere(ctx, srv.JS, "SESSIONS", "ev", events.LayoutFlat, "nowhere", 3, at); err != nil {
		t.Errorf("a session that is nowhere: %v", err)
	}
}
