package processor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/store"
)

func storeSkill(t testing.TB, root, name, desc, body string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	os.MkdirAll(dir, 0o755)
	md := fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n%s\n", name, desc, body)
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// withStore rebuilds e's registry over the skill folders on disk and the
// skill store, as serve composes them.
func (e *env) withStore() {
	e.t.Helper()
	sp, err := store.Open(context.Background(), e.js, store.Config{})
	if err != nil {
		e.t.Fatal(err)
	}
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true})
	if err != nil {
		e.t.Fatal(err)
	}
	e.registry.Close()
	e.registry = providers.NewRegistry([]providers.Provider{fs, sp}, providers.WithLogger(quietLogger()))
	r := e.registry
	e.t.Cleanup(func() { r.Close() })
}

// pushGlobal publishes global store skills named names, each described
// "Store skill <name>." with the body bodyPrefix+name+".", and returns the
// publisher and the push's changes.
func pushGlobal(t *testing.T, e *env, bodyPrefix string, names ...string) (*store.Publisher, []store.Change, error) {
	t.Helper()
	ctx := context.Background()
	pb, err := store.NewPublisher(ctx, e.js, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	var locals []store.Local
	for _, n := range names {
		l, err := store.ReadSkill(storeSkill(t, root, n, "Store skill "+n+".", bodyPrefix+n+"."), store.Config{})
		if err != nil {
			t.Fatal(err)
		}
		locals = append(locals, l)
	}
	changes, err := pb.Push(ctx, skillstore.Global, locals, false)
	return pb, changes, err
}

// A store skill removed with rm leaves the next catalog: a replacement
// catalog without it; a store skill's tool result carries its digest and
// revision, a disk skill's its digest.
func TestStoreRemoveReplacesCatalogAndResultsCarryDigests(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pb, changes, err := pushGlobal(t, e, "Body of ", "s-one", "s-two")
	if err != nil {
		t.Fatal(err)
	}
	e.withStore()
	e.writeSkill("a-skill", "A disk skill.")
	e.start()
	w := e.worker()
	const sid = "store-rm"
	d := w.preStep(events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool(), ResourceDir: "/res"})
	if d.Outcome != events.OutcomeAppended || !strings.Contains(d.Catalog.Text, "`s-two`") {
		t.Fatalf("first pre-step: %+v", d)
	}
	r := w.call(events.SkillCall{Session: sid, Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "s-two"}, ResourceDir: "/res"})
	if r.IsError || r.Value == nil || r.Value.Digest != changes[1].Digest || r.Value.Revision != changes[1].Revision ||
		r.Value.ResourceBase == nil || r.Value.ResourceBase.Path != "/res/s-two/"+changes[1].Digest[:16] {
		t.Fatalf("store skill result: %+v", r)
	}
	r = w.call(events.SkillCall{Session: sid, Call: "c2", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}})
	want, _ := agentskills.Digest(filepath.Join(e.skillDir, "a-skill"))
	if r.IsError || r.Value == nil || r.Value.Digest != want || want == "" || r.Value.Revision != 0 {
		t.Fatalf("disk skill result: %+v (want digest %s)", r, want)
	}
	rev, err := pb.Remove(ctx, skillstore.Global, "s-two")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.registry.CatchUp(ctx, rev); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for step := 2; ; step++ {
		d = w.preStep(events.PreStep{Session: sid, Step: fmt.Sprint(step), Cwd: e.cwd, Tools: ourTool()})
		if d.Outcome == events.OutcomeAppended {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replacement catalog after rm: %+v", d)
		}
	}
	if strings.Contains(d.Catalog.Text, "`s-two`") || !strings.Contains(d.Catalog.Text, "`s-one`") {
		t.Fatalf("replacement catalog:\n%s", d.Catalog.Text)
	}
	r = w.call(events.SkillCall{Session: sid, Call: "c3", Cwd: e.cwd, Args: events.SkillArgs{Name: "s-two"}})
	if !r.IsError || r.Error == nil || r.Error.Code != string(catalog.CodeUnknown) {
		t.Fatalf("call of a removed skill: %+v", r)
	}
}
