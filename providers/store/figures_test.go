//go:build unix

package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/search"
	"github.com/skillstream/skillstream/providers/store"
)

// The figures of a hostile administrator's writes to its store, for the
// record (not run by default: SKILLSTREAM_STORE_FIGURES=1). They use only
// what the store had before it was bounded, so the same test measures the
// code before and after:
//
//	SKILLSTREAM_STORE_FIGURES=1 go test ./providers/store -run TestStoreFigures -count=1 -v
//
// Flood: 900 records of 60 KiB (a whenToUse of distinct words), each
// naming a valid object of its own skill, applied by a running provider
// and loaded by a fresh one: heap held after a GC, time to apply, and the
// time of a first search of them (cut at 60 s). Within: the same with
// texts of 1,000 bytes, within a record's bounds. Object: 300 records naming
// one 8 MiB object: objects read, and the process's CPU time (the
// in-process server's included).
func TestStoreFigures(t *testing.T) {
	if os.Getenv("SKILLSTREAM_STORE_FIGURES") == "" {
		t.Skip("set SKILLSTREAM_STORE_FIGURES=1 to measure")
	}
	t.Run("flood", func(t *testing.T) { figureFlood(t, 60<<10, 0) })
	t.Run("within", func(t *testing.T) { figureFlood(t, 1000, 1000) })
	t.Run("object", figureObject)
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// figureFlood writes 900 records whose whenToUse and description are
// about when and desc bytes of distinct words (desc 0: the skill's own).
func figureFlood(t *testing.T, when, desc int) {
	srv := natstest.Start(t)
	ctx := context.Background()
	publisher(t, srv.JS, store.Config{}) // the buckets
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, 7)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	const n = 900
	root := t.TempDir()
	obs, _ := srv.JS.ObjectStore(ctx, skillstore.DefaultObjects)
	kv, _ := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	type prepared struct {
		key  string
		data []byte
	}
	var recs []prepared
	for i := range n {
		name := fmt.Sprintf("flood-%03d", i)
		l, err := store.ReadSkill(writeSkill(t, root, name, "Hostile.", "Body.", nil), store.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := obs.PutBytes(ctx, l.Record.Object, store.ArchiveOf(l)); err != nil {
			t.Fatal(err)
		}
		text := func(n int) string {
			var b strings.Builder
			for b.Len()+8 <= n {
				b.WriteString(word())
				b.WriteByte(' ')
			}
			return b.String()
		}
		rec := l.Record
		rec.WhenToUse = text(when)
		if desc > 0 {
			rec.Description = text(desc)
		}
		data, _ := json.Marshal(rec)
		recs = append(recs, prepared{skillstore.Global.Key(name), data})
	}
	base := heap()
	p := open(t, srv.JS, store.Config{})
	start := time.Now()
	var last uint64
	for _, r := range recs {
		var err error
		if last, err = kv.Put(ctx, r.key, r.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.CatchUp(ctx, last); err != nil {
		t.Fatal(err)
	}
	applied := time.Since(start)
	running := heap()
	l, _ := p.List(ctx, catalog.Query{})
	t.Logf("running provider: %d records applied in %v; %d listed; heap %.1f MiB over the baseline",
		n, applied.Round(time.Millisecond), len(l), float64(int64(running)-int64(base))/(1<<20))
	p.Close()
	base = heap()
	start = time.Now()
	fresh := open(t, srv.JS, store.Config{})
	loaded := time.Since(start)
	after := heap()
	l, _ = fresh.List(ctx, catalog.Query{})
	t.Logf("fresh provider: loaded in %v; %d listed; heap %.1f MiB over the baseline",
		loaded.Round(time.Millisecond), len(l), float64(int64(after)-int64(base))/(1<<20))
	reg := providers.NewRegistry([]providers.Provider{fresh})
	ix := search.New(reg, search.Options{})
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		ix.Search(ctx, catalog.Query{}, "hostile", 10, 0)
		done <- time.Since(start)
	}()
	select {
	case d := <-done:
		t.Logf("first search: %v; heap %.1f MiB over the baseline", d.Round(time.Millisecond), float64(int64(heap())-int64(base))/(1<<20))
	case <-time.After(60 * time.Second):
		t.Logf("first search: not answered in 60 s")
	}
}

func figureObject(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	pb := publisher(t, srv.JS, store.Config{})
	p := open(t, srv.JS, store.Config{})
	big := make([]byte, 8<<20-8<<10)
	for i := range big {
		big[i] = byte(rand.IntN(256))
	}
	cs := push(t, pb, skillstore.Global, false, writeSkill(t, t.TempDir(), "big-skill", "Big.", "Body.", map[string]string{"data.bin": string(big)}))
	if err := p.CatchUp(ctx, cs[0].Revision); err != nil {
		t.Fatal(err)
	}
	kv, _ := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	const n = 300
	fetches, used, start := p.Fetches(), cpu(), time.Now()
	var last uint64
	for i := range n {
		name := fmt.Sprintf("copy-%03d", i)
		rec := fmt.Sprintf(`{"name":%q,"description":"Copy.","invocation":{},"digest":%q,"object":%q,"size":10,"files":2}`, name, cs[0].Digest, cs[0].Digest)
		var err error
		if last, err = kv.Put(ctx, skillstore.Global.Key(name), []byte(rec)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.CatchUp(ctx, last); err != nil {
		t.Fatal(err)
	}
	t.Logf("running provider: %d records naming one 8 MiB object: %d object reads, %.2f CPU-seconds, %v",
		n, p.Fetches()-fetches, (cpu() - used).Seconds(), time.Since(start).Round(time.Millisecond))
	used, start = cpu(), time.Now()
	ctx2, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	fresh, err := store.Open(ctx2, srv.JS, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	t.Logf("fresh provider: %d object reads, %.2f CPU-seconds, %v",
		fresh.Fetches(), (cpu() - used).Seconds(), time.Since(start).Round(time.Millisecond))
}
