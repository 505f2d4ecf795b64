package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// TestRevokeKeyMidSession: with a serve running two live sessions under
// --catalog-updates changes, an administrator revokes the key that signed
// a store skill: the next step of each session drops the skill with a
// change list whose record says it was revoked, a call of it answers the
// unknown result, status, catalog --json and the warning metric say why;
// history names the revocation and replay --as-recorded of the exported
// session reproduces both sides with 0 differences. Bad input changes
// nothing.
func TestRevokeKeyMidSession(t *testing.T) {
	root := writeSkills(t, map[string]string{"local-notes": "Keep notes of the work.", "local-plan": "Plan the work in steps."})
	data := t.TempDir()
	s := startServe(t, data, root, "--catalog-updates", "changes")
	nats := []string{"--nats-url", s.url}
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, stderr := runMain(t, append(args, nats...)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, stderr)
		}
		return out + stderr
	}
	seed := filepath.Join(t.TempDir(), "pub.seed")
	out := run(exitOK, "skills", "keygen", "--out", seed)
	m := regexp.MustCompile(`public key (N[A-Z2-7]{55})`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("keygen: %s", out)
	}
	pub := m[1]
	signed := skillDir(t, "vendor-tool", "Run the vendor's tool.")
	run(exitOK, "skills", "push", signed, "--sign", seed)
	run(exitOK, "skills", "push", skillDir(t, "team-tool", "Run the team's tool."))

	c, err := client.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cwd := t.TempDir()
	tools := []events.Tool{client.SkillTool("skillstream")}
	steps := map[string]int{}
	step := func(sid string) events.Decision {
		t.Helper()
		steps[sid]++
		d, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: fmt.Sprint(steps[sid]), Cwd: cwd, Tools: tools, MinStoreRevision: 2})
		if err != nil {
			t.Fatalf("%s step %d: %v", sid, steps[sid], err)
		}
		return d
	}
	for _, sid := range []string{"rv1", "rv2"} {
		if got := names(step(sid)); !slices.Contains(got, "vendor-tool") || len(got) != 4 {
			t.Fatalf("%s: first catalog %v", sid, got)
		}
	}

	// Bad input: a malformed key or digest, a seed, unrevoking what is
	// not revoked; each says what was wrong, the policy unchanged.
	for _, bad := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"skills", "revoke", "--key", "NOPE"}, exitUsage, "is not a skill signing public key"},
		{[]string{"skills", "revoke", "--digest", "abc"}, exitUsage, "is not a digest"},
		{[]string{"skills", "revoke"}, exitUsage, "needs one of --key KEY or --digest DIGEST"},
		{[]string{"skills", "revoke", "--key", pub, "--digest", strings.Repeat("a", 64)}, exitUsage, "needs one of"},
		{[]string{"skills", "unrevoke", "--key", pub}, exitFailure, "is not revoked"},
	} {
		if got := run(bad.code, bad.args...); !strings.Contains(got, bad.want) {
			t.Errorf("%v: %q lacks %q", bad.args, got, bad.want)
		}
	}
	if got := run(exitOK, "skills", "revocations"); !strings.Contains(got, "nothing revoked") {
		t.Errorf("revocations before: %s", got)
	}

	out = run(exitOK, "skills", "revoke", "--key", pub)
	if !strings.Contains(out, "revoked key     "+pub) {
		t.Errorf("revoke: %s", out)
	}
	if got := run(exitFailure, "skills", "revoke", "--key", pub); !strings.Contains(got, "already revoked") {
		t.Errorf("revoke twice: %s", got)
	}
	if got := run(exitOK, "skills", "revocations", "--json"); !strings.Contains(got, `"keys": [`+"\n    \""+pub) {
		t.Errorf("revocations --json: %s", got)
	}

	// Every live session's next step drops the skill, and says why in the
	// record's source (never in the text).
	for _, sid := range []string{"rv1", "rv2"} {
		var d events.Decision
		for deadline := time.Now().Add(20 * time.Second); ; {
			d = step(sid)
			if d.Outcome == events.OutcomeAppended || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond) // the policy reaches the serve's store watch
		}
		if d.Catalog == nil || d.Catalog.Source.Update != events.UpdateChanges {
			t.Fatalf("%s: after the revocation %+v", sid, d)
		}
		src := d.Catalog.Source
		if len(src.Changes) != 1 || src.Changes[0].Name != "vendor-tool" || src.Changes[0].Change != "removed" ||
			!slices.Equal(src.Revoked, []string{"vendor-tool"}) || strings.Contains(d.Catalog.Text, "revoked") {
			t.Errorf("%s: change list %+v, text %q", sid, src, d.Catalog.Text)
		}
	}
	res, err := c.CallSkill(ctx, events.SkillCall{Session: "rv1", Call: "call-1", Cwd: cwd, Args: events.SkillArgs{Name: "vendor-tool"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.Error == nil || res.Error.Code != string(catalog.CodeUnknown) {
		t.Errorf("call of the revoked skill: %+v", res)
	}
	if d := step("rv1"); d.Outcome != events.OutcomeUnchanged {
		t.Errorf("a step after: %+v", d)
	}

	// Operators see why.
	if got := run(exitOK, "skills", "status", "vendor-tool"); !strings.Contains(got, "revoked key "+pub+": not offered") {
		t.Errorf("status: %s", got)
	}
	if got := run(exitOK, "catalog", "--json", "--no-bundled", "--user-skills-dir="); !strings.Contains(got, "global.vendor-tool") || !strings.Contains(got, "revoked") {
		t.Errorf("catalog --json lacks the diagnostic:\n%s", got)
	}
	if _, metrics, _ := s.get("/metrics"); !strings.Contains(metrics, `skillstream_store_warnings_total{kind="revoked"`) {
		t.Errorf("no revoked warning counted")
	}

	// A revoked digest: the skill's earlier revision is served in its
	// place, and no result carries the revoked digest.
	team := skillDir(t, "team-tool", "Run the team's tool.")
	writeFile(t, team, "notes.md", "Second version.")
	pushed := regexp.MustCompile(`store revision (\d+)`).FindStringSubmatch(run(exitOK, "skills", "push", team))
	if pushed == nil {
		t.Fatal("push printed no store revision")
	}
	var atRev uint64
	fmt.Sscan(pushed[1], &atRev)
	call := func(id string) events.ToolResult {
		t.Helper()
		res, err := c.CallSkill(ctx, events.SkillCall{Session: "rv2", Call: id, Cwd: cwd, Args: events.SkillArgs{Name: "team-tool"}, MinStoreRevision: atRev})
		if err != nil || res.IsError || res.Value == nil {
			t.Fatalf("call %s: %+v %v", id, res, err)
		}
		return res
	}
	second := call("team-1").Value.Digest
	run(exitOK, "skills", "revoke", "--digest", second)
	for i := 2; ; i++ {
		v := call(fmt.Sprint("team-", i)).Value
		if v.Digest != second {
			if v.Rev != 1 {
				t.Errorf("after the digest's revocation: rev %d %s, want rev 1", v.Rev, v.Digest)
			}
			break
		}
		if i > 200 {
			t.Fatal("the revoked digest is still served")
		}
		time.Sleep(50 * time.Millisecond) // the policy reaches the serve's store watch
	}
	c.Close()

	// The recording: history names the revocation; replay as recorded
	// reproduces both sides.
	rec := filepath.Join(t.TempDir(), "rv1.jsonl")
	run(exitOK, "export", "--session", "rv1", "--out", rec)
	code, out, stderr := runMain(t, "history", rec)
	if code != exitOK || !strings.Contains(out, "  removed 1: vendor-tool\n  revoked 1: vendor-tool\n") {
		t.Errorf("history: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runMain(t, "replay", rec, "--as-recorded", "--catalog-updates", "changes")
	if code != exitOK || !regexp.MustCompile(`\d+ triggers replayed: \d+ same, 0 differ\n$`).MatchString(out) {
		t.Errorf("replay --as-recorded: exit %d\n%s%s", code, out, stderr)
	}
}
