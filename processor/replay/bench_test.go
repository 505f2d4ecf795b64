package replay

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// largeRecording builds a recording of about n events: per turn a pre-step
// (unchanged after the first) and eight other events, a skill call and its
// result every 50 turns, a compaction every 1000 turns followed by the
// re-established catalog.
func largeRecording(tb testing.TB, n int) []byte {
	sk := testSkills()
	s := newSession(tb, "big")
	cwd := sk.root
	filler := map[string]any{"v": 1, "text": "lorem ipsum dolor sit amet, consectetur adipiscing elit"}
	published := false
	for turn := 0; int(s.seq) < n; turn++ {
		step := "step-" + itoa(turn)
		if turn%1000 == 999 {
			s.compact(s.seq + 1)
			published = false // masked; the next step re-establishes it
		}
		p := s.preStep(step, cwd, ours(s.owner))
		switch {
		case turn == 0:
			s.catalogFor(p, step, catalog.UpdateInitial, sk.skills)
			published = true
		case !published:
			s.catalogFor(p, step, catalog.UpdateReplacement, sk.skills)
			published = true
		}
		if turn%50 == 0 {
			c := s.call("call-"+itoa(turn), cwd, "b-skill")
			s.result(c, "call-"+itoa(turn), sk, cwd, "b-skill")
		}
		for range 8 {
			s.add("message.user", filler, nil)
		}
	}
	return s.recording()
}

func itoa(n int) string {
	b, _ := events.Encode(events.JSON, n)
	return string(b)
}

// BenchmarkReplay100k replays a 100,000-event recording against in-memory
// skills: the cost of reading, decoding and deciding, per whole recording.
func BenchmarkReplay100k(b *testing.B) {
	rec := largeRecording(b, 100000)
	sk := testSkills()
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(rec))
		if err != nil {
			b.Fatal(err)
		}
		sum, err := Run(context.Background(), r, Options{ToolOwner: "skillstream", Catalog: catalog.DefaultOptions(), Skills: sk})
		if err != nil || sum.Differ != 0 {
			b.Fatalf("%+v %v", sum, err)
		}
	}
}

// BenchmarkRead100k reads a 100,000-event recording without replaying it.
func BenchmarkRead100k(b *testing.B) {
	rec := largeRecording(b, 100000)
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(rec))
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}

func TestLargeRecordingReplaysIdentically(t *testing.T) {
	rec := largeRecording(t, 3000)
	_, sum := replayBytes(t, rec, Options{Skills: testSkills()})
	if sum.Differ != 0 || sum.Triggers < 300 {
		t.Errorf("summary = %+v", sum)
	}
}
