package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// stubProc is a consumer that is already stopped: Serve's handshake is
// what is under test, not a consumer.
type stubProc struct {
	stopped int
	err     error
}

func (p *stubProc) Measure() (Usage, bool) { return Usage{}, false }
func (p *stubProc) Stop() (ProcStats, error) {
	p.stopped++
	return ProcStats{Conflicts: 3, FirstError: "x"}, p.err
}

// A child says Ready, runs until its stdin ends, then prints its
// statistics as one JSON line that StartChild's reader decodes.
func TestServeHandshake(t *testing.T) {
	in := strings.NewReader(`{"role":"processor"}` + "\n" + "trailing input is read and ignored\n")
	dec := json.NewDecoder(in)
	var spec map[string]any
	if err := dec.Decode(&spec); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	p := &stubProc{}
	if err := Serve(context.Background(), p, dec, in, &out); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(strings.NewReader(out.String()))
	first, _ := r.ReadString('\n')
	if first != Ready+"\n" {
		t.Fatalf("first line %q, want %q", first, Ready)
	}
	var st ProcStats
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(line, &st); err != nil || st.Conflicts != 3 || st.FirstError != "x" {
		t.Fatalf("statistics %q: %+v, %v", line, st, err)
	}
	if rest, _ := io.ReadAll(r); len(rest) != 0 {
		t.Fatalf("more after the statistics: %q", rest)
	}
	if p.stopped != 1 {
		t.Fatalf("consumer stopped %d times, want once", p.stopped)
	}
}

// A consumer that fails to stop makes the child fail, without statistics.
func TestServeStopError(t *testing.T) {
	in := strings.NewReader("")
	var out strings.Builder
	boom := errors.New("boom")
	err := Serve(context.Background(), &stubProc{err: boom}, json.NewDecoder(in), in, &out)
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want %v", err, boom)
	}
	if out.String() != Ready+"\n" {
		t.Fatalf("output %q, want only the ready line", out.String())
	}
}

// A profile path that cannot be created is a clear error, not a panic.
func TestStartCPUProfileBadPath(t *testing.T) {
	_, err := StartCPUProfile(t.TempDir() + "/no/such/dir/cpu.pprof")
	if err == nil || !strings.Contains(err.Error(), "cpu profile") {
		t.Fatalf("err %v, want a cpu profile error", err)
	}
}
