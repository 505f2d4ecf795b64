package client

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/store"
)

// TestTrustedKeys: a client configured with trusted keys writes a store
// skill's files only when the result carries a signature by one of them
// that verifies over the skill's scope, name, digest and summary; an
// unsigned skill, one signed by another key, and a result whose
// signature was moved to another skill are refused with ErrUntrusted and
// nothing written. The model's text is the same with or without a
// signature.
func TestTrustedKeys(t *testing.T) {
	w := newWorld(t)
	ctx := timeout(t)
	pb, err := store.NewPublisher(ctx, w.srv.JS, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	kp, _ := skillstore.NewKey()
	pub, _ := kp.PublicKey()
	other, _ := skillstore.NewKey()
	otherPub, _ := other.PublicKey()
	push := func(name string, signer interface{}) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), name)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: Do "+name+".\n---\nBody of "+name+".\n"), 0o644)
		l, err := store.ReadSkill(dir, store.Config{})
		if err != nil {
			t.Fatal(err)
		}
		opts := store.PushOptions{}
		if signer == "trusted" {
			opts.Sign = kp
		} else if signer == "other" {
			opts.Sign = other
		}
		if _, err := pb.PushWith(ctx, skillstore.Global, []store.Local{l}, opts); err != nil {
			t.Fatal(err)
		}
	}
	push("signed", "trusted")
	push("unsigned", nil)
	push("stranger", "other")
	sp, err := store.Open(ctx, w.srv.JS, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	w.registry.Close()
	w.registry = providers.NewRegistry([]providers.Provider{fs, sp}, providers.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { w.registry.Close() })
	w.startProcessor()

	if _, err := New(w.srv.Connect(), WithTrustedKeys("SNOTAKEY")); err == nil {
		t.Error("WithTrustedKeys accepted a key that is not a publisher's")
	}
	c := w.client(WithTrustedKeys(pub))
	plain := w.client()
	res := t.TempDir()
	call := func(c *Client, id, name string) (events.ToolResult, error) {
		return c.CallSkill(ctx, events.SkillCall{Session: "tk", Call: id, Args: events.SkillArgs{Name: name}, ResourceDir: res})
	}
	r, err := call(c, "c1", "signed")
	if err != nil || r.Value.Signature == nil || r.Value.Signature.Key != pub || r.Value.Signature.Scope != "global" {
		t.Fatalf("signed: %+v, %v", r.Value, err)
	}
	if _, err := os.Stat(filepath.Join(r.Value.ResourceBase.Path, "SKILL.md")); err != nil {
		t.Errorf("signed skill's files not written: %v", err)
	}
	for i, name := range []string{"unsigned", "stranger"} {
		r, err := call(c, "u"+name, name)
		if !errors.Is(err, ErrUntrusted) || !errors.Is(err, ErrMaterialize) {
			t.Errorf("%s: %v, want ErrUntrusted", name, err)
		}
		if _, serr := os.Stat(r.Value.ResourceBase.Path); !os.IsNotExist(serr) {
			t.Errorf("%s: files written despite the refusal", name)
		}
		// Without trusted keys the same call writes them.
		if _, err := call(plain, "p"+name, name); err != nil {
			t.Errorf("%s without trusted keys: %v", name, err)
		}
		_ = i
	}
	if r, _ := call(c, "u2", "stranger"); r.Value.Signature == nil || r.Value.Signature.Key != otherPub {
		t.Errorf("stranger's result carries %+v", r.Value.Signature)
	}
	// A signature moved to another skill's result, or to another scope,
	// does not verify.
	r, _ = call(plain, "c2", "signed")
	moved := r
	v := *r.Value
	v.Name = "stranger"
	moved.Value = &v
	if err := c.checkTrusted(moved); !errors.Is(err, skillstore.ErrBadSignature) {
		t.Errorf("signature moved to another skill: %v", err)
	}
	sg := *r.Value.Signature
	sg.Scope = "project/p1"
	v = *r.Value
	v.Signature = &sg
	moved.Value = &v
	if err := c.checkTrusted(moved); !errors.Is(err, skillstore.ErrBadSignature) {
		t.Errorf("signature moved to another scope: %v", err)
	}
	if u, _ := call(plain, "c3", "unsigned"); u.Text == "" || r.Text == "" {
		t.Fatal("no text")
	}
}
