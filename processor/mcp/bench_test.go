package mcp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// fixture1000 serves 1,000 folder skills, each a SKILL.md and two files.
func fixture1000(b *testing.B) *fixture {
	f := newFixture(b, fixtureOpts{})
	var names []string
	for i := range 1000 {
		n := "skill-" + strconv.Itoa(i)
		names = append(names, n)
		writeSkill(b, f.root, n, map[string]string{
			"SKILL.md":            skillMD(n, "Skill number "+strconv.Itoa(i)+" does one thing well.", "Body."),
			"references/guide.md": "Guide " + n,
			"scripts/run.sh":      "#!/bin/sh\necho " + n + "\n",
		})
	}
	f.waitFor(b, names...)
	return f
}

// BenchmarkSkillsListPage: one skills/list request (the first page of 100
// entries) over real HTTP, with 1,000 skills served.
func BenchmarkSkillsListPage(b *testing.B) {
	f := fixture1000(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, rerr := f.rpc(b, "skills/list", map[string]any{}); rerr != nil {
			b.Fatal(rerr)
		}
	}
	b.StopTimer()
	reportHandler(b, f, "skills/list")
}

// reportHandler reports the mean time the server spent in method, from
// its own latency histogram (the HTTP round trip is ns/op).
func reportHandler(b *testing.B, f *fixture, method string) {
	mfs, err := f.metrics.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "skillstream_mcp_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == method {
				h := m.GetHistogram()
				b.ReportMetric(h.GetSampleSum()/float64(h.GetSampleCount())*1e9, "ns/handler")
			}
		}
	}
}

// BenchmarkSkillsListAll: paging through all 1,000 skills (10 requests).
func BenchmarkSkillsListAll(b *testing.B) {
	f := fixture1000(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if n := len(f.listAll(b)); n != 1000 {
			b.Fatalf("%d skills", n)
		}
	}
}

// BenchmarkSync1000: a sync of 1,000 unchanged skills (what a change
// announcement costs before anything is rebuilt).
func BenchmarkSync1000(b *testing.B) {
	f := fixture1000(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f.sync(b)
	}
}

// fixtureN serves n folder skills (each a SKILL.md and two files in two
// subfolders, written before the registry first reads the folder) to a
// server that syncs only when told (noRun). Past 4,096 skills the folder
// is over the provider's watch bound and polled: its poll interval is
// short here, so that an edit is seen soon.
func fixtureN(b *testing.B, n int) *fixture {
	f := newFixture(b, fixtureOpts{noRun: true, folder: agentskills.Config{PollInterval: 100 * time.Millisecond},
		setup: func(t testing.TB, root string) {
			for i := range n {
				name := "skill-" + strconv.Itoa(i)
				writeSkill(t, root, name, map[string]string{
					"SKILL.md":            skillMD(name, "Skill number "+strconv.Itoa(i)+" does one thing well.", "Body."),
					"references/guide.md": "Guide " + name,
					"scripts/run.sh":      "#!/bin/sh\necho " + name + "\n",
				})
			}
		}})
	if got := len(f.listAll(b)); got != n {
		b.Fatalf("%d skills served, want %d", got, n)
	}
	return f
}

// changed waits until a provider of the fixture's registry announces a
// change on one of chans (taken before the change was made).
func changed(b *testing.B, chans []<-chan struct{}) {
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(time.After(30 * time.Second))}}
	for _, ch := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	if i, _, _ := reflect.Select(cases); i == 0 {
		b.Fatal("no change announced within 30 s")
	}
}

// benchResync times the sync that follows one edited skill among n
// folder skills: the SKILL.md of one skill replaced (a new description),
// the provider's announcement awaited (untimed), then one Sync (timed).
// It reports the skills whose files the sync read (reads/op) and the
// loads it asked of the registry (loads/op).
func benchResync(b *testing.B, n int) {
	f := fixtureN(b, n)
	timeResyncs(b, f, "skill-", n, func(name, md string) {
		replaceFile(b, filepath.Join(f.root, name, "SKILL.md"), md)
	})
}

// timeResyncs times b.N syncs, each after one of skills prefix0..n-1 was
// given a new description by edit (untimed, the provider's announcement
// awaited), checking that the change is served, and reports the skills
// whose files each sync read (reads/op) and the loads it asked of the
// registry (loads/op).
func timeResyncs(b *testing.B, f *fixture, prefix string, n int, edit func(name, md string)) {
	b.ReportAllocs()
	var files, loads int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := prefix + strconv.Itoa((i*7919)%n)
		desc := "Revision " + strconv.Itoa(i) + " of " + name + "."
		chans, _ := f.reg.Changes(catalog.Query{})
		edit(name, skillMD(name, desc, "Body."))
		changed(b, chans)
		files0, loads0 := f.reg.files.Load(), f.reg.loads.Load()
		b.StartTimer()
		f.sync(b)
		b.StopTimer()
		files += f.reg.files.Load() - files0
		loads += f.reg.loads.Load() - loads0
		res, rerr := f.rpc(b, "resources/read", map[string]any{"uri": "skill://" + name + "/SKILL.md"})
		if rerr != nil || !strings.Contains(string(res), desc) {
			b.Fatalf("%s not served after the sync: %s %+v", name, res, rerr)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(files)/float64(b.N), "reads/op")
	b.ReportMetric(float64(loads)/float64(b.N), "loads/op")
}

// replaceFile replaces path with data at once, as editors save.
func replaceFile(t testing.TB, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(filepath.Dir(path)), ".tmp-"+filepath.Base(filepath.Dir(path)))
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkResync1000Folder: the sync after one of 1,000 folder skills
// changed.
func BenchmarkResync1000Folder(b *testing.B) { benchResync(b, 1000) }

// BenchmarkResync10000Folder: the same among 10,000 folder skills (a
// folder over the watch bound, polled).
func BenchmarkResync10000Folder(b *testing.B) { benchResync(b, 10000) }

// BenchmarkResync1000Store: the sync after one of 1,000 store skills was
// pushed anew (a new description), on an embedded NATS server.
func BenchmarkResync1000Store(b *testing.B) {
	const n = 1000
	f := newFixture(b, fixtureOpts{store: true, noRun: true})
	src := b.TempDir()
	var dirs []string
	for i := range n {
		name := "stored-" + strconv.Itoa(i)
		dirs = append(dirs, writeSkill(b, src, name, map[string]string{
			"SKILL.md":            skillMD(name, "Stored skill "+strconv.Itoa(i)+".", "Body."),
			"references/guide.md": "Guide " + name,
		}))
	}
	f.push(b, dirs...)
	natstest.Eventually(b, 60*time.Second, "store skills served", func() error {
		f.sync(b)
		if got := len(f.listAll(b)); got != n {
			return fmt.Errorf("%d skills served", got)
		}
		return nil
	})
	timeResyncs(b, f, "stored-", n, func(name, md string) {
		writeSkill(b, src, name, map[string]string{"SKILL.md": md})
		f.push(b, filepath.Join(src, name))
	})
}

// BenchmarkResourcesList10000: a host's resources/list of all 10,000
// skills (the SDK's pages of 1,000) through a real MCP client session over
// Streamable HTTP.
func BenchmarkResourcesList10000(b *testing.B) {
	const n = 10000
	f := fixtureN(b, n)
	c := sdk.NewClient(&sdk.Implementation{Name: "bench-host", Version: "1"}, nil)
	ctx := context.Background()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: f.url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		count := 0
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				b.Fatal(err)
			}
			if r.Name == "" {
				b.Fatalf("resource %s without a name", r.URI)
			}
			count++
		}
		if count != n {
			b.Fatalf("%d resources listed, want %d", count, n)
		}
	}
	b.StopTimer()
	reportHandler(b, f, "resources/list")
}
