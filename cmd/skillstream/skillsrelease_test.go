package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers/store"
)

// The release commands as the manual walks through them: push a draft,
// release it to a share of sessions, read its status, promote it, pin a
// scope, unpin, roll a canary back; and each refusal names what was
// wrong and exits 1 (2 for a bad command line).
func TestSkillsReleaseCommands(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	nats := []string{"--nats-url", srv.URL()}
	root := t.TempDir()
	run := func(want int, args ...string) string {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), nats...)...)
		if code != want {
			t.Fatalf("skills %v: exit %d, want %d\n%s%s", args, code, want, stdout, stderr)
		}
		t.Logf("$ skillstream skills %s\n%s%s", strings.Join(args, " "), stdout, stderr)
		return stdout + stderr
	}
	expect := func(out string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	}
	writeFile(t, root, "commit-message/SKILL.md", skillMD("Write one line.", "name: commit-message", "description: Writes commit messages."))
	run(0, "push", root)
	writeFile(t, root, "commit-message/SKILL.md", skillMD("Write a subject and a body.", "name: commit-message", "description: Writes commit messages, subject and body."))
	expect(run(0, "push", root, "--draft"), "updated commit-message rev 2 ", "(draft: offered to no session; skills release commit-message 2 --canary P% offers it)")
	expect(run(0, "status", "commit-message"), "commit-message in global: draft, offered to no session", "stable     rev 1 ", "candidate  rev 2 ", "pins       none")
	expect(run(1, "promote", "commit-message"), "no canary to promote: rev 2 is a draft")
	expect(run(2, "release", "commit-message", "2", "--canary", "101%"), `"101%" is over 100%`)
	expect(run(2, "release", "commit-message", "2", "--canary", "2.555%"), "more than two decimals")
	expect(run(1, "release", "commit-message", "7", "--canary", "10%"), "revision 7 is not one the index keeps")
	expect(run(1, "release", "commit-message", "1", "--canary", "10%"), "rev 1 is not the release's candidate (rev 2 ")
	expect(run(0, "release", "commit-message", "2", "--canary", "10%"), "released commit-message rev 2 ", "to 10% of sessions (canary); the others keep rev 1 ")
	st := run(0, "status", "commit-message", "--json")
	var js store.Status
	if err := json.Unmarshal([]byte(st), &js); err != nil || js.Channel != "canary" || js.Share != 1000 || js.Stable.Rev != 1 || js.Candidate.Rev != 2 {
		t.Fatalf("status --json: %+v, %v\n%s", js, err, st)
	}
	expect(run(0, "release", "commit-message", "2", "--canary", "2.5"), "to 2.5% of sessions")
	expect(run(0, "promote", "commit-message"), "promoted commit-message rev 2 ", "stable for every session (was 2.5% of sessions)")
	expect(run(0, "status", "commit-message"), "stable, no release in progress", "stable     rev 2 ")
	expect(run(1, "release", "commit-message", "2", "--canary", "10%"), "rev 2 is already stable", "push a new revision with skills push --draft first")
	expect(run(0, "pin", "commit-message@1", "--scope", "project/payments"), "pinned commit-message for project/payments to rev 1 ", "(the global skill)")
	expect(run(1, "pin", "commit-message@9", "--scope", "global"), "revision 9 is not one the index keeps")
	expect(run(2, "pin", "commit-message@1"), "skills pin needs --scope")
	expect(run(0, "status", "commit-message"), "pinned     for project/payments: rev 1 ")
	expect(run(0, "unpin", "commit-message", "--scope", "project/payments"), "unpinned commit-message for project/payments")
	expect(run(1, "unpin", "commit-message", "--scope", "project/payments"), "not pinned for project/payments")
	// A canary rolled back: every session back on the stable revision.
	writeFile(t, root, "commit-message/SKILL.md", skillMD("Write haiku.", "name: commit-message", "description: Writes commit messages as haiku."))
	run(0, "push", root, "--draft")
	run(0, "release", "commit-message", "3", "--canary", "50%")
	expect(run(0, "rollback", "commit-message", "--scope", "global"), "ended the release of commit-message: every session is back on the files of rev 2, published as rev 4 ")
	expect(run(0, "status", "commit-message"), "stable, no release in progress", "stable     rev 4 ")
	expect(run(2, "release", "commit-message", "4"), "needs --canary")
	expect(run(2, "push", root, "--draft", "--prune"), "--draft and --prune")
}

// Every refused release command leaves the store as it was: the index
// is not written, whatever the refusal (a bad share, a promote with no
// release, a skill, revision or scope that is not there, a removal).
func TestSkillsReleaseRefusalsWriteNothing(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	root := t.TempDir()
	run := func(want int, args ...string) string {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), "--nats-url", srv.URL())...)
		if code != want {
			t.Fatalf("skills %v: exit %d, want %d\n%s%s", args, code, want, stdout, stderr)
		}
		return stdout + stderr
	}
	writeFile(t, root, "gone/SKILL.md", skillMD("Gone.", "name: gone", "description: Soon removed."))
	writeFile(t, root, "deploy/SKILL.md", skillMD("Deploy.", "name: deploy", "description: Deploys."))
	run(0, "push", root)
	run(0, "rm", "gone", "--scope", "global")
	if err := os.RemoveAll(filepath.Join(root, "gone")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "deploy/SKILL.md", skillMD("Deploy twice.", "name: deploy", "description: Deploys twice."))
	run(0, "push", root, "--draft")
	js, err := jetstream.New(srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	indexSeq := func() uint64 {
		t.Helper()
		s, err := js.Stream(context.Background(), "KV_"+skillstore.DefaultBucket)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	before := indexSeq()
	for _, tt := range []struct {
		exit int
		args []string
		text string
	}{
		{exitUsage, []string{"release", "deploy", "2", "--canary", "-5%"}, `"-5%"`},
		{exitUsage, []string{"release", "deploy", "2", "--canary", "ten"}, `"ten"`},
		{exitUsage, []string{"release", "deploy", "two", "--canary", "10%"}, `"two"`},
		{exitFailure, []string{"release", "nope", "1", "--canary", "10%"}, "nope"},
		{exitFailure, []string{"release", "gone", "1", "--canary", "10%"}, "the skill is removed"},
		{exitFailure, []string{"pin", "gone@2", "--scope", "global"}, "is a removal"},
		{exitFailure, []string{"pin", "nope@1", "--scope", "global"}, "nope"},
		{exitUsage, []string{"pin", "deploy", "--scope", "global"}, "needs NAME@REV"},
		{exitFailure, []string{"unpin", "deploy", "--scope", "global"}, "not pinned"},
	} {
		out := run(tt.exit, tt.args...)
		t.Logf("skills %v: %s", tt.args, out)
		if !strings.Contains(out, tt.text) {
			t.Errorf("skills %v: output lacks %q:\n%s", tt.args, tt.text, out)
		}
		if after := indexSeq(); after != before {
			t.Fatalf("skills %v wrote to the index (sequence %d -> %d)", tt.args, before, after)
		}
	}
	// A promote with no release in progress: refused, nothing written.
	run(0, "release", "deploy", "2", "--canary", "10%")
	run(0, "promote", "deploy")
	before = indexSeq()
	if out := run(exitFailure, "promote", "deploy"); !strings.Contains(out, "no canary to promote: no release is in progress") {
		t.Errorf("promote with no release:\n%s", out)
	}
	if after := indexSeq(); after != before {
		t.Errorf("a refused promote wrote to the index (sequence %d -> %d)", before, after)
	}
}
