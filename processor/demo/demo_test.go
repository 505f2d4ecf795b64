package demo

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// The demo's event listing names a catalog head and says when an event
// does not decode.
func TestDescribeCatalogHead(t *testing.T) {
	b, err := events.Encode(events.Msgpack, events.CatalogHead{V: 1, Session: "s", Step: "3", Digest: "ab"})
	if err != nil {
		t.Fatal(err)
	}
	if got := describeEvent(events.KindCatalogHead, b); got != "head of step 3's catalog" {
		t.Errorf("head described as %q", got)
	}
	if got := describeEvent(events.KindCatalogHead, []byte{0xc1}); got != "(not decoded)" {
		t.Errorf("garbage described as %q", got)
	}
}

func TestDescribeInvocation(t *testing.T) {
	b, err := events.Encode(events.Msgpack, events.SkillInvocation{V: 1, Session: "s", Step: "4", Name: "pdf"})
	if err != nil {
		t.Fatal(err)
	}
	if got := describeEvent(events.KindInvocation, b); got != "step 4: /pdf" {
		t.Errorf("invocation described as %q", got)
	}
}

// projectSkills is the registry the command gives the demo: project skill
// folders only, watched.
func projectSkills(t *testing.T) func() (*providers.Registry, error) {
	return func() (*providers.Registry, error) {
		fs, err := agentskills.New(agentskills.Config{ProjectDirs: agentskills.DefaultProjectDirs(), NoUserDir: true})
		if err != nil {
			return nil, err
		}
		return providers.NewRegistry([]providers.Provider{fs}), nil
	}
}

// Run plays every section of the session and ends with the session log;
// the project it played in stays in dir for the caller to remove.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := Run(context.Background(), &out, dir, catalog.Options{}, log, projectSkills(t)); err != nil {
		t.Fatalf("%v\noutput so far:\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"== 1. The agent's first step: the catalog appears",
		"processor: appended, initial catalog with 2 skills",
		"processor: tool.result from provider \"agentskills\"",
		"processor: tool.result, error unknown",
		"A skill is added on disk: a replacement catalog",
		"processor: appended, tombstone with 0 skills",
		"The session log in JetStream",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "skill.invocation") {
		t.Errorf("user invocation shown without userInvocation:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "project", ".agents")); err != nil {
		t.Errorf("project not in dir: %v", err)
	}
}

// A registry that cannot be built stops the demo before anything starts.
func TestRunRegistryError(t *testing.T) {
	boom := errors.New("boom")
	var out strings.Builder
	err := Run(context.Background(), &out, t.TempDir(), catalog.Options{}, slog.New(slog.NewTextHandler(io.Discard, nil)),
		func() (*providers.Registry, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want %v", err, boom)
	}
	if out.Len() != 0 {
		t.Fatalf("printed before failing:\n%s", out.String())
	}
}
