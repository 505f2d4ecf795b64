package bundled_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/bundled"
)

func TestBuiltinSkills(t *testing.T) {
	p, err := bundled.New()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := p.List(context.Background(), catalog.At("/any"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
		if c.Source != catalog.SourceBundled || c.Provider != "bundled" || c.Rank != providers.RankBundled {
			t.Errorf("%s: source %q provider %q rank %d", c.Name, c.Source, c.Provider, c.Rank)
		}
		if c.ResourceBase == nil || c.ResourceBase.Kind != catalog.ResourceOpaque || c.ResourceBase.Description == "" {
			t.Errorf("%s: resource base %+v, want opaque with a description", c.Name, c.ResourceBase)
		}
		if !c.Invocation.ModelInvocable || !c.Invocation.UserInvocable {
			t.Errorf("%s: invocation %+v", c.Name, c.Invocation)
		}
		sk, err := p.Load(context.Background(), c.Name, catalog.At(""))
		if err != nil || len(sk.Content) < 500 || sk.Summary.Description != c.Description {
			t.Errorf("Load %s: %d bytes, %v", c.Name, len(sk.Content), err)
		}
	}
	if strings.Join(names, ",") != "reviewing-skills,writing-skills" {
		t.Errorf("bundled skills = %v", names)
	}
	if _, err := p.Load(context.Background(), "nope", catalog.At("")); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Load nope: %v", err)
	}
	if p.Changes(catalog.At("/x")) != nil {
		t.Error("bundled skills announce changes")
	}
}

func TestBadFS(t *testing.T) {
	_, err := bundled.New(bundled.WithFS(fstest.MapFS{
		"bad/SKILL.md": {Data: []byte("---\nname: Bad\ndescription: d\n---\n")},
	}))
	if err == nil || !strings.Contains(err.Error(), `bad/SKILL.md: name "Bad" is invalid`) {
		t.Fatalf("err = %v", err)
	}
	_, err = bundled.New(bundled.WithFS(fstest.MapFS{
		"a/SKILL.md": {Data: []byte("---\nname: dup\ndescription: d\n---\n")},
		"b/SKILL.md": {Data: []byte("---\nname: dup\ndescription: d\n---\n")},
	}))
	if err == nil || !strings.Contains(err.Error(), "defined twice") {
		t.Fatalf("err = %v", err)
	}
}
