package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers/store"
)

// catalog shows what a scope's sessions get of the store and why: each
// store skill's origin (rev, digest, channel), a pin, and a release in
// progress with its candidate and share; --session previews that
// session's cohort, candidate or stable as serve places it.
func TestCatalogReleases(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	nats := []string{"--nats-url", srv.URL()}
	root := t.TempDir()
	skills := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), nats...)...)
		if code != exitOK {
			t.Fatalf("skills %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		return stdout
	}
	preview := func(args ...string) (catalogView, string) {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"catalog", "--json", "--no-bundled", "--user-skills-dir=", "--cwd", t.TempDir()}, args...), nats...)...)
		if code != exitOK {
			t.Fatalf("catalog %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		var v catalogView
		if err := json.Unmarshal([]byte(stdout), &v); err != nil {
			t.Fatalf("catalog %v: %v\n%s", args, err, stdout)
		}
		return v, stderr
	}
	origin := func(v catalogView, name string) catalog.Origin {
		for _, s := range v.Skills {
			if s.Name == name {
				return s.Origin
			}
		}
		t.Fatalf("no skill %s in %+v", name, v.Skills)
		return catalog.Origin{}
	}
	writeFile(t, root, "commit-message/SKILL.md", skillMD("Write one line.", "name: commit-message", "description: Writes commit messages."))
	writeFile(t, root, "review/SKILL.md", skillMD("Review it.", "name: review", "description: Reviews changes."))
	skills("push", root)
	writeFile(t, root, "review/SKILL.md", skillMD("Review it twice.", "name: review", "description: Reviews changes twice."))
	skills("push", root)
	skills("pin", "review@1", "--scope", "global")
	writeFile(t, root, "commit-message/SKILL.md", skillMD("Write a subject and a body.", "name: commit-message", "description: Writes commit messages, subject and body."))
	skills("push", root, "--draft")

	// A draft: no release yet, every session gets the stable revision.
	v, sum := preview()
	if o := origin(v, "commit-message"); o.Rev != 1 || o.Channel != catalog.ChannelStable || len(v.Releases) != 0 {
		t.Errorf("with a draft: commit-message %+v, releases %+v", o, v.Releases)
	}
	if o := origin(v, "review"); o.Rev != 1 || o.Channel != catalog.ChannelPin || !strings.Contains(sum, "pinned: review at rev 1 ") {
		t.Errorf("pinned review: %+v\n%s", o, sum)
	}

	skills("release", "commit-message", "2", "--canary", "50%")
	var st store.Status
	if err := json.Unmarshal([]byte(skills("status", "commit-message", "--json")), &st); err != nil || st.Candidate == nil {
		t.Fatalf("status: %+v %v", st, err)
	}
	rel := catalog.Release{Name: "commit-message", Candidate: st.Candidate.Digest, Share: 5000}
	v, sum = preview()
	if o := origin(v, "commit-message"); o.Rev != 1 || o.Channel != catalog.ChannelStable || v.Session != "" {
		t.Errorf("outside the canary: commit-message %+v", o)
	}
	if len(v.Releases) != 1 || v.Releases[0] != (releaseJSON{Name: "commit-message", Rev: 2, Candidate: st.Candidate.Digest, Share: 5000}) {
		t.Errorf("releases: %+v", v.Releases)
	}
	if !strings.Contains(sum, "release in progress: commit-message rev 2 "+st.Candidate.Digest[:12]+" to 50% of sessions; this preview is a session's outside the canary") {
		t.Errorf("summary lacks the release:\n%s", sum)
	}
	seen := map[bool]bool{}
	for i := 0; len(seen) < 2 && i < 50; i++ {
		sid := "cat-" + strconv.Itoa(i)
		in := catalog.InCanary("", sid, rel)
		if seen[in] {
			continue
		}
		seen[in] = true
		v, sum := preview("--session", sid)
		o := origin(v, "commit-message")
		want := releaseJSON{Name: "commit-message", Rev: 2, Candidate: st.Candidate.Digest, Share: 5000, Taken: &in}
		if len(v.Releases) != 1 || *v.Releases[0].Taken != in || v.Releases[0].Rev != want.Rev || v.Session != sid {
			t.Errorf("session %s: releases %+v", sid, v.Releases)
		}
		if in && (o.Rev != 2 || o.Channel != catalog.ChannelCanary || !strings.Contains(sum, "; session "+sid+" takes the candidate") ||
			!strings.Contains(v.Text, "subject and body")) {
			t.Errorf("canary session %s: %+v\n%s%s", sid, o, v.Text, sum)
		}
		if !in && (o.Rev != 1 || o.Channel != catalog.ChannelStable || !strings.Contains(sum, "; session "+sid+" keeps the stable revision") ||
			strings.Contains(v.Text, "subject and body")) {
			t.Errorf("stable session %s: %+v\n%s%s", sid, o, v.Text, sum)
		}
		if o := origin(v, "review"); o.Channel != catalog.ChannelPin {
			t.Errorf("session %s: review %+v", sid, o)
		}
	}
	if len(seen) != 2 {
		t.Fatalf("50 sessions all on one side of a 50%% canary: %v", seen)
	}
	if code, _, stderr := runMain(t, append([]string{"catalog", "--session", "a b"}, nats...)...); code != exitUsage || !strings.Contains(stderr, "--session") {
		t.Errorf("catalog --session 'a b': exit %d\n%s", code, stderr)
	}
}
