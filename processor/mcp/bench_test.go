package mcp_test

import (
	"strconv"
	"testing"
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
