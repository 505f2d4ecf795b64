package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
)

// storeRevision reads "store revision N" from push or rollback output.
func storeRevision(t *testing.T, out string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`store revision (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no store revision in:\n%s", out)
	}
	var n uint64
	fmt.Sscan(m[1], &n)
	return n
}

// A rollback reaches a live session through serve: the next pre-step
// appends one replacement with the old summary; a rollback that changes
// only the body appends nothing.
func TestSkillsRollbackReachesLiveSession(t *testing.T) {
	s := startServe(t, t.TempDir(), t.TempDir())
	c, err := client.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	skills := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), "--nats-url", s.url)...)
		if code != 0 {
			t.Fatalf("skills %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		return stdout
	}
	root := t.TempDir()
	publish := func(desc, body string) uint64 {
		t.Helper()
		writeFile(t, root, "roll/SKILL.md", skillMD(body, "name: roll", "description: "+desc))
		return storeRevision(t, skills("push", root))
	}
	step := 0
	preStep := func(rev uint64) events.Decision {
		t.Helper()
		step++
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		d, err := c.PreStep(ctx, events.PreStep{Session: "rollback", Step: fmt.Sprint(step), Cwd: t.TempDir(),
			Tools: []events.Tool{client.SkillTool("skillstream")}, MinStoreRevision: rev})
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		return d
	}
	describe := func(d events.Decision) string {
		if d.Catalog == nil {
			return d.Outcome
		}
		var es []string
		for _, e := range d.Catalog.Source.Entries {
			es = append(es, e.Name+"="+e.Description)
		}
		return d.Outcome + " " + d.Catalog.Source.Update + " " + strings.Join(es, ",")
	}

	if got := describe(preStep(publish("First.", "Body one."))); got != "appended initial roll=First." {
		t.Fatalf("first pre-step: %s", got)
	}
	if got := describe(preStep(publish("Second.", "Body two."))); got != "appended replacement roll=Second." {
		t.Fatalf("after the second push: %s", got)
	}
	out := skills("rollback", "roll", "--scope", "global")
	if !regexp.MustCompile(`^rolled back roll to the files of rev 1: rev 3 [0-9a-f]{12}\nstore revision 3 epoch [0-9a-f]{16}\n$`).MatchString(out) {
		t.Fatalf("rollback:\n%s", out)
	}
	if got := describe(preStep(storeRevision(t, out))); got != "appended replacement roll=First." {
		t.Fatalf("pre-step after the rollback: %s, want one replacement with the old summary", got)
	}
	if got := describe(preStep(0)); got != events.OutcomeUnchanged {
		t.Fatalf("next pre-step: %s, want unchanged", got)
	}
	hist := skills("history", "roll")
	lines := strings.Split(strings.TrimSpace(hist), "\n")
	if len(lines) != 3 || strings.Fields(lines[0])[2] != strings.Fields(lines[2])[2] || strings.Fields(lines[1])[2] == strings.Fields(lines[0])[2] {
		t.Fatalf("history after rollback (want rev 3's digest equal to rev 1's):\n%s", hist)
	}
	// The body only: the listed summary is the same, no replacement.
	if got := describe(preStep(publish("First.", "Body three."))); got != events.OutcomeUnchanged {
		t.Fatalf("a body-only push: %s, want unchanged", got)
	}
	out = skills("rollback", "roll", "--scope", "global")
	if got := describe(preStep(storeRevision(t, out))); got != events.OutcomeUnchanged {
		t.Fatalf("a body-only rollback: %s, want unchanged", got)
	}

	// The loads and their folding show on /metrics: limit 200, one skill.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, name := range []string{"roll", "roll", "nope"} {
		if _, err := c.CallSkill(ctx, events.SkillCall{Session: "rollback", Call: "c" + name + fmt.Sprint(step), Cwd: t.TempDir(),
			Args: events.SkillArgs{Name: name}}); err != nil {
			t.Fatal(err)
		}
		step++
	}
	body := scrape(t, s.metrics+"/metrics")
	for _, want := range []string{
		`skillstream_skill_loads_total{outcome="ok",skill="roll"} 2`,
		`skillstream_skill_loads_total{outcome="unknown",skill="_unknown"} 1`, // a name that resolved to nothing
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSkillsDiff(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	run := func(want int, args ...string) string {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), "--nats-url", srv.URL())...)
		if code != want {
			t.Fatalf("skills %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, stdout, stderr)
		}
		return stdout + stderr
	}
	root := t.TempDir()
	writeFile(t, root, "a-skill/SKILL.md", skillMD("Version one.\nSame line.", "name: a-skill", "description: A skill."))
	writeFile(t, root, "a-skill/notes/ref.txt", "reference")
	writeFile(t, root, "a-skill/old.txt", "old\n")
	writeFile(t, root, "a-skill/blob.bin", "\x00\x01")
	run(0, "push", root)
	writeFile(t, root, "a-skill/SKILL.md", skillMD("Version two.\nSame line.", "name: a-skill", "description: A skill."))
	writeFile(t, root, "a-skill/scripts/new.sh", "echo new\n")
	writeFile(t, root, "a-skill/blob.bin", "\x00\x02")
	if err := removeFile(root, "a-skill/old.txt"); err != nil {
		t.Fatal(err)
	}
	run(0, "push", root)

	for _, args := range [][]string{{"diff", "a-skill", "1", "2"}, {"diff", "a-skill", "1"}} {
		out := run(0, args...)
		head, rest, _ := strings.Cut(out, "\n\n")
		lines := strings.Split(head, "\n")
		want := []string{"changed SKILL.md", "changed blob.bin", "removed old.txt", "added   scripts/new.sh"}
		if len(lines) != 5 || !regexp.MustCompile(`^a-skill in global: rev 1 [0-9a-f]{12} -> rev 2 [0-9a-f]{12}$`).MatchString(lines[0]) ||
			strings.Join(lines[1:], "\n") != strings.Join(want, "\n") {
			t.Fatalf("skills %v, files:\n%s\nwant:\n%s", args, head, strings.Join(want, "\n"))
		}
		for _, w := range []string{"--- a/SKILL.md (rev 1)\n+++ b/SKILL.md (rev 2)\n", "-Version one.\n+Version two.\n Same line.",
			"binary or over 1048576 bytes: blob.bin not shown", "--- a/old.txt (rev 1)\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n",
			"--- /dev/null\n+++ b/scripts/new.sh (rev 2)\n"} {
			if !strings.Contains(rest, w) {
				t.Errorf("skills %v: diff lacks %q:\n%s", args, w, rest)
			}
		}
		if strings.Contains(out, "ref.txt") {
			t.Errorf("an unchanged file is named:\n%s", out)
		}
	}
	if out := run(0, "diff", "a-skill", "2", "2"); !strings.HasSuffix(out, "no file differs\n") {
		t.Errorf("diff of a revision with itself:\n%s", out)
	}
}

func removeFile(root, rel string) error {
	return os.Remove(filepath.Join(root, rel))
}

// Bad input to diff and rollback: a clear message, exit 1 (2 for a bad
// command line).
func TestSkillsDiffRollbackBadInput(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	root := t.TempDir()
	writeFile(t, root, "a-skill/SKILL.md", skillMD("One.", "name: a-skill", "description: A skill."))
	run := func(args ...string) (int, string) {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), "--nats-url", srv.URL())...)
		return code, stdout + stderr
	}
	if code, out := run("push", root); code != 0 {
		t.Fatal(out)
	}
	writeFile(t, root, "a-skill/SKILL.md", skillMD("Two.", "name: a-skill", "description: A skill."))
	if code, out := run("push", root); code != 0 {
		t.Fatal(out)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"diff", "nope", "1"}, 1, `skill "nope" in global: skill not found`},
		{[]string{"diff", "a-skill", "99"}, 1, `skill "a-skill" in global: revision 99 is not one the index keeps (its newest is 2; see skills history)`},
		{[]string{"diff", "a-skill", "store:99"}, 1, `skill "a-skill" in global: store revision 99 is not one of its revisions the index keeps (store revisions 1 to 2`},
		{[]string{"diff", "a-skill", "store:0"}, 2, `revision "store:0": want a positive integer`},
		{[]string{"diff", "a-skill", "store:"}, 2, `revision "store:": want a positive integer`},
		{[]string{"diff", "a-skill", "1", "store:x"}, 2, `revision "store:x": want a positive integer`},
		{[]string{"diff", "a-skill", "x"}, 2, `revision "x": want a positive integer`},
		{[]string{"diff", "a-skill", "0"}, 2, `revision "0": want a positive integer`},
		{[]string{"diff", "a-skill", "1", "-3"}, 2, "flag provided but not defined: -3"},
		{[]string{"diff", "a-skill", "1", "99999999999999999999"}, 2, `revision "99999999999999999999": want a positive integer`},
		{[]string{"diff", "Bad Name", "1"}, 2, "invalid skill name"},
		{[]string{"diff", "a-skill", "1", "--scope", "project/nope"}, 1, "scope project/nope holds no skills"},
		{[]string{"diff", "a-skill"}, 2, "skills diff needs NAME REV_A [REV_B]"},
		{[]string{"rollback", "nope", "--scope", "global"}, 1, `skill "nope" in global: skill not found`},
		{[]string{"rollback", "a-skill", "--scope", "project/nope"}, 1, "scope project/nope holds no skills"},
		{[]string{"rollback", "a-skill", "--scope", "global", "--to", "99"}, 1, "revision 99 is not one the index keeps"},
		{[]string{"rollback", "a-skill", "--scope", "global", "--to", "abc"}, 2, `revision "abc": want a positive integer`},
		{[]string{"rollback", "a-skill", "--scope", "bogus"}, 2, "--scope"},
		{[]string{"rollback", "a-skill"}, 2, "skills rollback needs --scope"},
		{[]string{"ls", "--to", "1"}, 2, "--to applies to rollback only"},
		{[]string{"diff", "a-skill", "1", "--revision", "1"}, 2, "--revision applies to get only"},
		{[]string{"get", "a-skill@1", "--revision", "2", "--out", t.TempDir()}, 2, "give the revision as a-skill@1 or with --revision, not both"},
		{[]string{"get", "a-skill", "--revision", "0", "--out", t.TempDir()}, 2, `revision "0": want a positive integer`},
		{[]string{"get", "a-skill@store:", "--out", t.TempDir()}, 2, `revision "store:": want a positive integer`},
		{[]string{"get", "a-skill@3", "--out", t.TempDir()}, 1, "revision 3 is not one the index keeps"},
	}
	for _, tt := range tests {
		code, out := run(tt.args...)
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("skills %v: exit %d\n%s\nwant exit %d and %q", tt.args, code, out, tt.code, tt.want)
		}
	}
	// The files of revision 1 removed (as gc would): refused, nothing written.
	nc := srv.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, skillstore.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.GetRevision(ctx, "global.a-skill", 1)
	if err != nil {
		t.Fatal(err)
	}
	digest := regexp.MustCompile(`"digest":"([0-9a-f]{64})"`).FindStringSubmatch(string(e.Value()))[1]
	obs, err := js.ObjectStore(ctx, skillstore.DefaultObjects)
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(ctx, digest); err != nil {
		t.Fatal(err)
	}
	code, out := run("rollback", "a-skill", "--scope", "global")
	if code != 1 || !strings.Contains(out, "the files of revision 1 ("+digest[:12]+") were removed by gc") {
		t.Errorf("rollback to removed files: exit %d\n%s", code, out)
	}
	if code, out := run("diff", "a-skill", "1"); code != 1 || !strings.Contains(out, "skill files missing") {
		t.Errorf("diff with removed files: exit %d\n%s", code, out)
	}
	if code, out := run("history", "a-skill"); code != 0 || strings.Count(out, "\n") != 2 {
		t.Errorf("a refused rollback wrote a revision:\n%s", out)
	}
}

func TestMetricsSkillLimitFlag(t *testing.T) {
	code, _, stderr := runMain(t, "serve", "--metrics-skill-limit", "0", "--no-bundled", "--user-skills-dir=")
	if code != 2 || !strings.Contains(stderr, "--metrics-skill-limit 0: want at least 1") {
		t.Errorf("--metrics-skill-limit 0: exit %d, %s", code, stderr)
	}
	t.Setenv("SKILLSTREAM_METRICS_SKILL_LIMIT", "-4")
	code, _, stderr = runMain(t, "serve", "--no-bundled", "--user-skills-dir=")
	if code != 2 || !strings.Contains(stderr, "--metrics-skill-limit -4: want at least 1") {
		t.Errorf("SKILLSTREAM_METRICS_SKILL_LIMIT=-4: exit %d, %s", code, stderr)
	}
}

// A skill's revisions count from 1 in its own history, however many
// other skills were pushed before it: diff, get and rollback take those
// numbers (store:N a store revision), history shows both, and the store
// revisions push, rollback and rm print are still the tokens'.
func TestSkillsRevisionsPerSkill(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), "--nats-url", srv.URL())...)
		if code != want {
			t.Fatalf("skills %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, stdout, stderr)
		}
		return stdout, stderr
	}
	others := t.TempDir()
	writeFile(t, others, "a-skill/SKILL.md", skillMD("A.", "name: a-skill", "description: A skill."))
	writeFile(t, others, "b-skill/SKILL.md", skillMD("B.", "name: b-skill", "description: B skill."))
	run(0, "push", others)
	root := t.TempDir()
	writeFile(t, root, "pdf/SKILL.md", skillMD("Version one.", "name: pdf", "description: PDF."))
	out, _ := run(0, "push", root)
	if !regexp.MustCompile(`^added pdf rev 1 [0-9a-f]{12}\nstore revision 3 epoch [0-9a-f]{16}\n$`).MatchString(out) {
		t.Fatalf("first push of pdf:\n%s", out)
	}
	writeFile(t, root, "pdf/SKILL.md", skillMD("Version two.", "name: pdf", "description: PDF."))
	out, _ = run(0, "push", root, "--json")
	if !strings.Contains(out, `"rev": 2,`) || !strings.Contains(out, `"revision": 4,`) || !strings.Contains(out, `"token": "`) {
		t.Fatalf("second push of pdf:\n%s", out)
	}

	for _, args := range [][]string{{"diff", "pdf", "1", "2"}, {"diff", "pdf", "1"}, {"diff", "pdf", "store:3", "store:4"}} {
		out, _ := run(0, args...)
		if !regexp.MustCompile(`^pdf in global: rev 1 [0-9a-f]{12} -> rev 2 [0-9a-f]{12}\nchanged SKILL.md\n`).MatchString(out) ||
			!strings.Contains(out, "--- a/SKILL.md (rev 1)\n+++ b/SKILL.md (rev 2)\n") {
			t.Fatalf("skills %v:\n%s", args, out)
		}
	}
	for i, args := range [][]string{{"pdf@1"}, {"pdf", "--revision", "1"}, {"pdf@store:3"}} {
		dest := t.TempDir()
		t.Cleanup(func() { makeWritable(dest) })
		out, _ := run(0, append([]string{"get", "--out", dest}, args...)...)
		data, err := os.ReadFile(filepath.Join(dest, "pdf", "SKILL.md"))
		if !strings.HasPrefix(out, "wrote pdf rev 1 ") || err != nil || !strings.Contains(string(data), "Version one.") {
			t.Fatalf("get %d %v: %s%q, %v", i, args, out, data, err)
		}
	}

	out, _ = run(0, "rollback", "pdf", "--to", "1", "--scope", "global")
	if !regexp.MustCompile(`^rolled back pdf to the files of rev 1: rev 3 [0-9a-f]{12}\nstore revision 5 epoch [0-9a-f]{16}\n$`).MatchString(out) {
		t.Fatalf("rollback to 1:\n%s", out)
	}
	out, _ = run(0, "rm", "pdf", "--scope", "global")
	if !regexp.MustCompile(`^removed pdf rev 4\nstore revision 6 epoch [0-9a-f]{16}\n$`).MatchString(out) {
		t.Fatalf("rm:\n%s", out)
	}
	out, _ = run(0, "rollback", "pdf", "--to", "store:4", "--scope", "global")
	if !regexp.MustCompile(`^rolled back pdf to the files of rev 2: rev 5 [0-9a-f]{12}\nstore revision 7 epoch [0-9a-f]{16}\n$`).MatchString(out) {
		t.Fatalf("rollback to store:4:\n%s", out)
	}
	out, stderr := run(0, "history", "pdf")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := []string{`rev 1 (\S{12}) \S+Z store revision 3`, `rev 2 (\S{12}) \S+Z store revision 4`, `rev 3 (\S{12}) \S+Z store revision 5`,
		`rev 4 removed \S+Z store revision 6`, `rev 5 (\S{12}) \S+Z store revision 7`}
	if len(lines) != len(want) || stderr != "" {
		t.Fatalf("history:\n%s%s", out, stderr)
	}
	for i, w := range want {
		if !regexp.MustCompile("^" + w + "$").MatchString(lines[i]) {
			t.Fatalf("history line %d: %q, want %s", i+1, lines[i], w)
		}
	}
	if digest := func(i int) string { return strings.Fields(lines[i])[2] }; digest(2) != digest(0) || digest(4) != digest(1) || digest(0) == digest(1) {
		t.Fatalf("history (want rev 3's files rev 1's, rev 5's rev 2's):\n%s", out)
	}
	if out, _ := run(0, "ls"); !hasRow(out, []string{"global", "pdf", "5"}) || !hasRow(out, []string{"global", "a-skill", "1"}) {
		t.Fatalf("ls:\n%s", out)
	}
	if _, stderr := run(1, "diff", "pdf", "4"); !strings.Contains(stderr, "revision 4 (store revision 6) is a removal") {
		t.Fatalf("diff to a removal:\n%s", stderr)
	}
}

// With a bounded history the numbers stay as the oldest revisions drop
// out; records written without a number (as by an older skillstream) are
// listed and numbered, counted from the oldest kept, and history says so.
func TestSkillsRevisionsBoundedAndOld(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), "--nats-url", srv.URL(), "--skill-store-history", "3")...)
		if code != want {
			t.Fatalf("skills %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, stdout, stderr)
		}
		return stdout, stderr
	}
	root := t.TempDir()
	for v := 1; v <= 5; v++ {
		writeFile(t, root, "pdf/SKILL.md", skillMD(fmt.Sprintf("Version %d.", v), "name: pdf", "description: PDF."))
		if out, _ := run(0, "push", root); !strings.HasPrefix(out, fmt.Sprintf("added pdf rev %d ", v)) && !strings.HasPrefix(out, fmt.Sprintf("updated pdf rev %d ", v)) {
			t.Fatalf("push %d:\n%s", v, out)
		}
	}
	out, _ := run(0, "history", "pdf")
	if got := regexp.MustCompile(`(?m)^rev (\d+) `).FindAllStringSubmatch(out, -1); len(got) != 3 || got[0][1] != "3" || got[2][1] != "5" {
		t.Fatalf("history with 3 kept:\n%s", out)
	}
	if _, stderr := run(1, "get", "pdf@2", "--out", t.TempDir()); !strings.Contains(stderr, "revision 2 is not one the index keeps (it keeps revisions 3 to 5, older ones left its history)") {
		t.Fatalf("get of a dropped revision:\n%s", stderr)
	}
	if out, _ := run(0, "diff", "pdf", "3", "5"); !strings.Contains(out, "-Version 3.\n+Version 5.\n") {
		t.Fatalf("diff 3 5:\n%s", out)
	}

	// Old-style records: the value a push wrote, without its number.
	ctx := context.Background()
	kv, err := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "global.pdf")
	if err != nil {
		t.Fatal(err)
	}
	old := regexp.MustCompile(`,"rev":\d+`).ReplaceAll(e.Value(), nil)
	for range 3 {
		if _, err := kv.Put(ctx, "global.old", regexp.MustCompile(`"name":"pdf"`).ReplaceAll(old, []byte(`"name":"old"`))); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr := run(0, "history", "old")
	if got := regexp.MustCompile(`(?m)^rev (\d+) [0-9a-f]{12} `).FindAllStringSubmatch(out, -1); len(got) != 3 || got[0][1] != "1" || got[2][1] != "3" ||
		!strings.Contains(stderr, "no revision the index keeps of old records its number") {
		t.Fatalf("history of old records:\n%s%s", out, stderr)
	}
	if out, _ := run(0, "ls"); !hasRow(out, []string{"global", "old", "3"}) || !hasRow(out, []string{"global", "pdf", "5"}) {
		t.Fatalf("ls with old records:\n%s", out)
	}
	writeFile(t, root, "old/SKILL.md", skillMD("New.", "name: old", "description: Old."))
	if out, _ := run(0, "push", filepath.Join(root, "old")); !strings.HasPrefix(out, "updated old rev 4 ") {
		t.Fatalf("push over old records:\n%s", out)
	}
	out, stderr = run(0, "history", "old")
	if got := regexp.MustCompile(`(?m)^rev (\d+) `).FindAllStringSubmatch(out, -1); len(got) != 3 || got[0][1] != "2" || got[2][1] != "4" || stderr != "" {
		t.Fatalf("history once a push records a number (the old ones keep theirs):\n%s%s", out, stderr)
	}
}
