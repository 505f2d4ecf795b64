package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// TestServeSearchBodies: serve --skill-search --search-bodies finds a
// skill by a word its body alone holds, says so in the serving line, and
// follows an edit of the body alone; without --search-bodies the body's
// words find nothing.
func TestServeSearchBodies(t *testing.T) {
	root := searchRoot(t)
	writeFile(t, root, "pdf-forms/SKILL.md", skillMD("1. List the fields with pdftk dump_data_fields.\n2. Fill them and flatten.",
		"name: pdf-forms", "description: Fill in PDF forms and extract their fields."))
	cwd := t.TempDir()
	search := func(s *served, sid, query string) []string {
		t.Helper()
		c, err := client.New(s.connect(t))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := c.SearchSkills(ctx, events.SkillSearch{Session: sid, Call: "s1", Cwd: cwd, Args: events.SearchArgs{Query: query}})
		if err != nil || r.Search == nil {
			t.Fatalf("search %q: %+v, %v", query, r, err)
		}
		var names []string
		for _, m := range r.Search.Results {
			names = append(names, m.Name)
		}
		return names
	}
	s := startServe(t, t.TempDir(), root, "--skill-search")
	if got := search(s, "a", "pdftk"); len(got) != 0 {
		t.Errorf("without --search-bodies, a body's word found %v", got)
	}
	if strings.Contains(s.stderr.String(), "search_bodies") {
		t.Errorf("serving line names search_bodies without the flag:\n%s", s.stderr)
	}
	if code := s.stop(); code != exitOK {
		t.Fatalf("serve: exit %d\n%s", code, s.stderr)
	}

	s = startServe(t, t.TempDir(), root, "--skill-search", "--search-bodies")
	if got := search(s, "b", "pdftk"); len(got) != 1 || got[0] != "pdf-forms" {
		t.Errorf("with --search-bodies, a body's word found %v; want [pdf-forms]", got)
	}
	if !strings.Contains(s.stderr.String(), `"search_bodies":"on"`) {
		t.Errorf("serving line does not say search_bodies on:\n%s", s.stderr)
	}
	// A session's catalog records the option, so that a replay of its
	// recording ranks searches as serve did.
	func() {
		c, err := client.New(s.connect(t))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tools := []events.Tool{client.SkillTool("skillstream"), client.SkillSearchTool("skillstream")}
		d, err := c.PreStep(ctx, events.PreStep{Session: "rec", Step: "1", Cwd: cwd, Tools: tools})
		if err != nil || d.Catalog == nil || d.Catalog.Source.Options == nil {
			t.Fatalf("pre-step: %+v, %v", d, err)
		}
		if !d.Catalog.Source.Options.SearchBodies || !d.Catalog.Source.Options.Search {
			t.Errorf("the catalog records options %+v: want search and searchBodies", *d.Catalog.Source.Options)
		}
	}()
	// The body alone changes: the index reads it again.
	writeFile(t, root, "pdf-forms/SKILL.md", skillMD("1. Fill the fields with qpdf and flatten.",
		"name: pdf-forms", "description: Fill in PDF forms and extract their fields."))
	n := 0
	eventually(t, 30*time.Second, "the index follows an edit of a body", func() error {
		n++
		if got := search(s, fmt.Sprintf("c%d", n), "qpdf"); len(got) != 1 || got[0] != "pdf-forms" {
			return fmt.Errorf("qpdf found %v", got)
		}
		return nil
	})
	if got := search(s, "d", "pdftk"); len(got) != 0 {
		t.Errorf("the body's old word still finds %v", got)
	}
	if code := s.stop(); code != exitOK {
		t.Fatalf("serve: exit %d\n%s", code, s.stderr)
	}
}

// TestServeSearchBodiesFlags: --search-bodies without --skill-search is a
// usage error naming both.
func TestServeSearchBodiesFlags(t *testing.T) {
	code, _, stderr := runMain(t, "serve", "--search-bodies")
	if want := "--search-bodies indexes the skills' bodies for skill search: it needs --skill-search"; code != exitUsage || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, want)
	}
}
