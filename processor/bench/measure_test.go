package bench

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
)

// Measure runs a phase against the real processor in this process: every
// session finishes, every trigger is answered, and the report carries the
// consumer's statistics and where its CPU was measured.
func TestMeasureInProcess(t *testing.T) {
	srv := natstest.Start(t)
	g := generateSkills(t, 3)
	reg, names := g.reg, g.names
	cfg := processor.Config{}.WithDefaults()
	ctx := context.Background()
	started := 0
	c := Consumer{Role: RoleProcessor, Mode: ModeInProcess, InProcess: func() (Proc, error) {
		started++
		pnc := srv.Connect()
		return StartProcessor(ctx, pnc, reg, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), pnc.Close)
	}}
	p := Plan{Prefix: cfg.Prefix, RunID: "t", Sessions: 2, Steps: 2, Calls: 1, Concurrency: 2,
		Enc: events.Msgpack, Owner: cfg.ToolOwner, Skills: names, Timeout: 10 * time.Second, Tries: 3}
	ph, err := Measure(ctx, srv.Connect(), c, p, time.Minute, NewChanges(0, 4, nil), func(Progress) {})
	if err != nil {
		t.Fatal(err)
	}
	if started != 1 {
		t.Fatalf("consumer started %d times, want once", started)
	}
	if !ph.Complete || ph.PreSteps != 4 || ph.SkillCalls != 4 || ph.Errors != 0 {
		t.Fatalf("phase: complete %v, %d pre-steps, %d skill calls, %d errors (%v); want 4 + 4 without error",
			ph.Complete, ph.PreSteps, ph.SkillCalls, ph.Errors, ph.ErrorSamples)
	}
	if ph.Processor == nil || ph.Processor.Stages["total"].Count == 0 {
		t.Fatalf("no processor statistics: %+v", ph.Processor)
	}
	if !strings.HasPrefix(ph.CPUScope, "whole process") || ph.CPUSeconds <= 0 {
		t.Fatalf("CPU %v s, scope %q", ph.CPUSeconds, ph.CPUScope)
	}
}
