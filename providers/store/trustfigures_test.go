//go:build unix

package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers/store"
)

// The figure of a member's start at 10,000 signed skills against 10,000
// unsigned, for the record (not run by default):
//
//	SKILLSTREAM_TRUST_FIGURES=1 go test ./providers/store -run TestTrustFigures -count=1 -v
//
// Three stores of 10,000 global skills: unsigned under no policy (today),
// signed under require signed (every signature verified before the load
// is offered), and unsigned under require signed (none trusted: each
// key's history is read for a trusted revision). Each is opened as serve
// opens it (LazyVerify: objects checked after the start, signatures
// before) and as a one-shot preview does (every object checked first):
// wall time of Open and the process's CPU time.
func TestTrustFigures(t *testing.T) {
	if os.Getenv("SKILLSTREAM_TRUST_FIGURES") == "" {
		t.Skip("set SKILLSTREAM_TRUST_FIGURES=1 to measure")
	}
	const n = 10000
	srv := natstest.Start(t)
	ctx := context.Background()
	root := t.TempDir()
	var locals []store.Local
	for i := range n {
		name := fmt.Sprintf("skill-%05d", i)
		dir := filepath.Join(root, name)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(fmt.Sprintf("---\nname: %s\ndescription: Skill number %d of the figure.\n---\nBody %d.\n", name, i, i)), 0o644)
		l, err := store.ReadSkill(dir, store.Config{})
		if err != nil {
			t.Fatal(err)
		}
		locals = append(locals, l)
	}
	kp, pub := newKey(t)
	for _, s := range []struct {
		bucket, require string
		sign            bool
	}{{"UNSIGNED", store.RequireOff, false}, {"SIGNED", store.RequireSigned, true}, {"UNTRUSTED", store.RequireSigned, false}} {
		cfg := store.Config{Bucket: s.bucket, Objects: s.bucket}
		pb := publisher(t, srv.JS, cfg)
		opts := store.PushOptions{}
		if s.sign {
			opts.Sign = kp
		}
		start := time.Now()
		if _, err := pb.PushWith(ctx, skillstore.Global, locals, opts); err != nil {
			t.Fatal(err)
		}
		setPolicy(t, pb, s.require, "", pub)
		t.Logf("%s: pushed %d skills in %v", s.bucket, n, time.Since(start).Round(time.Millisecond))
		for _, lazy := range []bool{true, false} {
			c := cfg
			c.LazyVerify = lazy
			used, start := cpu(), time.Now()
			octx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			p, err := store.Open(octx, srv.JS, c)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			took, spent := time.Since(start), cpu()-used
			l, _ := p.List(ctx, catalog.Query{})
			t.Logf("%s (require %s), lazy %v: Open %v, %.2f CPU-seconds; %d offered, %d untrusted",
				s.bucket, s.require, lazy, took.Round(time.Millisecond), spent.Seconds(), len(l), len(p.Untrusted()))
			p.Close()
		}
	}
}
