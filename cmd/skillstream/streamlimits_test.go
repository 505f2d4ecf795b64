package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// servingLine is serve's "skillstream serving" log line, decoded.
func (s *served) servingLine(t testing.TB) map[string]any {
	t.Helper()
	// Readiness may answer a moment before the line is written: the
	// processor is ready first, then serve says so.
	var rec map[string]any
	eventually(t, 10*time.Second, "the serving line", func() error {
		for line := range strings.SplitSeq(s.stderr.String(), "\n") {
			var r map[string]any
			if json.Unmarshal([]byte(line), &r) == nil && r["msg"] == "skillstream serving" {
				rec = r
				return nil
			}
		}
		return fmt.Errorf("no serving line in:\n%s", s.stderr)
	})
	return rec
}

// streamConfig is the session stream's config as the server has it.
func (s *served) streamConfig(t testing.TB) jetstream.StreamConfig {
	t.Helper()
	js, err := jetstream.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "SESSIONS")
	if err != nil {
		t.Fatal(err)
	}
	return st.CachedInfo().Config
}

// TestServeStreamLimits: serve creates the session stream with the limits
// it is given, and its serving line names them and that it created them.
// Started again without them, it keeps the stream's (an upgrade never
// shrinks a stream); given others, it applies them; given 0, it lifts
// them. Each start names the stream's limits as they then are.
func TestServeStreamLimits(t *testing.T) {
	root, data := spec4Skills(t), t.TempDir()
	type limits struct {
		bytes   int64
		age     time.Duration
		msgSize int32
	}
	for _, step := range []struct {
		name  string
		flags []string
		want  limits
		line  map[string]string
	}{
		{"created", []string{"--max-bytes", "2GiB", "--max-age", "48h", "--max-msg-size", "512KiB", "--max-trigger-bytes", "32KiB"},
			limits{2 << 30, 48 * time.Hour, 512 << 10},
			map[string]string{"max_bytes": "2GiB", "max_age": "48h", "max_msg_size": "512KiB", "stream_limits": "created", "max_trigger_bytes": "32KiB"}},
		{"defaults keep the stream's", nil,
			limits{2 << 30, 48 * time.Hour, 512 << 10},
			map[string]string{"max_bytes": "2GiB", "max_age": "48h", "max_msg_size": "512KiB", "stream_limits": "kept", "max_trigger_bytes": "64KiB"}},
		{"given ones are applied", []string{"--max-bytes", "1GiB"},
			limits{1 << 30, 48 * time.Hour, 512 << 10},
			map[string]string{"max_bytes": "1GiB", "max_age": "48h", "max_msg_size": "512KiB", "stream_limits": "applied"}},
		{"zero lifts them", []string{"--max-age", "0", "--max-msg-size", "0"},
			limits{1 << 30, 0, -1},
			map[string]string{"max_bytes": "1GiB", "max_age": "none", "max_msg_size": "none", "stream_limits": "applied"}},
	} {
		t.Run(step.name, func(t *testing.T) {
			s := startServe(t, data, root, step.flags...)
			sc := s.streamConfig(t)
			if got := (limits{sc.MaxBytes, sc.MaxAge, sc.MaxMsgSize}); got != step.want {
				t.Errorf("stream limits %+v, want %+v", got, step.want)
			}
			if sc.Discard != jetstream.DiscardOld {
				t.Errorf("discard policy %v, want old", sc.Discard)
			}
			line := s.servingLine(t)
			for k, v := range step.line {
				if line[k] != v {
					t.Errorf("serving line %s = %v, want %q", k, line[k], v)
				}
			}
			if code := s.stop(); code != exitOK {
				t.Fatalf("exit %d:\n%s", code, s.stderr)
			}
		})
	}
}

// TestServeDefaultStreamLimits: with nothing configured, the stream serve
// creates is bounded to 30 days, 10 GiB and messages of 1 MiB, and the
// serving line says so.
func TestServeDefaultStreamLimits(t *testing.T) {
	s := startServe(t, t.TempDir(), spec4Skills(t))
	sc := s.streamConfig(t)
	if sc.MaxBytes != 10<<30 || sc.MaxAge != 30*24*time.Hour || sc.MaxMsgSize != 1<<20 || sc.Discard != jetstream.DiscardOld {
		t.Errorf("stream limits: max bytes %d, max age %v, max message size %d, discard %v", sc.MaxBytes, sc.MaxAge, sc.MaxMsgSize, sc.Discard)
	}
	line := s.servingLine(t)
	for k, v := range map[string]string{"max_bytes": "10GiB", "max_age": "720h", "max_msg_size": "1MiB", "stream_limits": "created", "max_trigger_bytes": "64KiB"} {
		if line[k] != v {
			t.Errorf("serving line %s = %v, want %q", k, line[k], v)
		}
	}
}
