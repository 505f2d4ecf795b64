package catalog_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
)

func TestGestures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		texts []string
		want  []string
	}{
		{"start", []string{"/pdf fill the form"}, []string{"pdf"}},
		{"alone", []string{"/pdf"}, []string{"pdf"}},
		{"mid sentence", []string{"please use /pdf here"}, []string{"pdf"}},
		{"end", []string{"please use /pdf"}, []string{"pdf"}},
		{"twice", []string{"/pdf and /pdf again"}, []string{"pdf"}},
		{"twice across texts", []string{"/pdf", "then /docx and /pdf"}, []string{"pdf", "docx"}},
		{"order of first appearance", []string{"/b /a", "/c /b"}, []string{"b", "a", "c"}},
		{"next to a path", []string{"/pdf /x/refs"}, []string{"pdf"}},
		{"path", []string{"read /x/refs now"}, nil},
		{"fraction", []string{"5/8 of it"}, nil},
		{"word then slash", []string{"foo/x"}, nil},
		{"punctuation after", []string{"/pdf, please"}, nil},
		{"upper case", []string{"/PDF"}, nil},
		{"hyphenated", []string{"use /pdf-tools\tnow"}, []string{"pdf-tools"}},
		{"bad hyphens", []string{"/-pdf /pdf- /p--df"}, nil},
		{"newline and unicode space", []string{"line\n/pdf\u00a0/docx\u2003"}, []string{"pdf", "docx"}},
		{"slash alone", []string{"/ / //"}, nil},
		{"double slash", []string{"//pdf"}, nil},
		{"adjacent gestures", []string{"/a/b /c"}, []string{"c"}},
		{"non-space before", []string{"x/pdf é/pdf"}, nil},
		{"empty", []string{"", ""}, nil},
		{"long name kept", []string{"/" + strings.Repeat("a", 70)}, []string{strings.Repeat("a", 70)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := catalog.Gestures(tc.texts); !slices.Equal(got, tc.want) {
				t.Errorf("Gestures(%q) = %q, want %q", tc.texts, got, tc.want)
			}
		})
	}
}

func FuzzGestures(f *testing.F) {
	for _, s := range []string{"/pdf", "a /b-c /x/y 5/8 foo/x", "/\xff", " /a\u00a0/b", "//", "/a-", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names := catalog.Gestures([]string{s})
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				t.Fatalf("name %q twice in %q", n, names)
			}
			seen[n] = true
			if !strings.Contains(s, "/"+n) {
				t.Fatalf("name %q not gestured in %q", n, s)
			}
			if len(n) <= 64 && !catalog.ValidName(n) {
				t.Fatalf("name %q outside the grammar", n)
			}
		}
	})
}

func TestInvokeFollowsTheToolsResolution(t *testing.T) {
	ctx := context.Background()
	userOnly := skill("user-only", nil, body)
	userOnly.Invocation = catalog.Invocation{ModelInvocable: false, UserInvocable: true}
	modelOnly := skill("model-only", nil, body)
	modelOnly.Invocation = catalog.Invocation{ModelInvocable: true, UserInvocable: false}
	dir := &catalog.ResourceBase{Kind: catalog.ResourceDirectory, Path: "/r/pdf"}
	l := lookupOf(skill("pdf", dir, body), userOnly, modelOnly)
	opts := catalog.DefaultOptions()

	g := catalog.Invoke(ctx, l, "pdf", opts)
	tool := catalog.Execute(ctx, l, "pdf", opts)
	if !g.Invoked() || g.Result.Text() != tool.Text() {
		t.Errorf("invocation of pdf %+v differs from the tool's result %q", g, tool.Text())
	}

	// Hidden from the model, still the user's to call.
	if g := catalog.Invoke(ctx, l, "user-only", opts); !g.Invoked() || !strings.Contains(g.Result.Text(), body) {
		t.Errorf("user-only: %+v, want invoked", g)
	}
	if r := catalog.Execute(ctx, l, "user-only", opts); r.Err == nil || r.Err.Code != catalog.CodeNotModelInvocable {
		t.Errorf("the tool loads user-only: %+v", r)
	}
	before := l.loads
	if g := catalog.Invoke(ctx, l, "model-only", opts); g.Invoked() || g.Reason != catalog.IgnoredNotUserInvocable {
		t.Errorf("model-only: %+v, want ignored not_user_invocable", g)
	}
	if l.loads != before {
		t.Errorf("a skill the user may not invoke was loaded")
	}
	for _, name := range []string{"nope", strings.Repeat("a", 70)} {
		if g := catalog.Invoke(ctx, l, name, opts); g.Invoked() || g.Reason != catalog.IgnoredUnknown {
			t.Errorf("%s: %+v, want ignored unknown", name, g)
		}
	}
	// The loaded definition counts too: a skill made not user-invocable
	// between resolution and load is not invoked.
	changed := lookupOf(skill("pdf", nil, body))
	s := changed.load["pdf"]
	s.Invocation.UserInvocable = false
	changed.load["pdf"] = s
	if g := catalog.Invoke(ctx, changed, "pdf", opts); g.Invoked() || g.Reason != catalog.IgnoredNotUserInvocable {
		t.Errorf("changed before load: %+v", g)
	}
	// Vanished between resolution and load, or the provider failed.
	gone := lookupOf(skill("pdf", nil, body))
	delete(gone.load, "pdf")
	if g := catalog.Invoke(ctx, gone, "pdf", opts); g.Invoked() || g.Reason != catalog.IgnoredLoadFailed {
		t.Errorf("gone before load: %+v", g)
	}
	failing := lookupOf(skill("pdf", nil, body))
	failing.err = errors.New("disk on fire")
	if g := catalog.Invoke(ctx, failing, "pdf", opts); g.Invoked() || g.Reason != catalog.IgnoredLoadFailed || g.Result.Err == nil || g.Result.Err.Message != "disk on fire" {
		t.Errorf("provider failure: %+v", g)
	}
}

func TestInvokeTruncates(t *testing.T) {
	opts := catalog.DefaultOptions()
	opts.MaxSkillBytes = catalog.MinMaxSkillBytes
	l := lookupOf(skill("big", nil, strings.Repeat("x", 5000)))
	g := catalog.Invoke(context.Background(), l, "big", opts)
	if !g.Invoked() || g.Result.Value.Truncated == nil || g.Result.Value.Truncated.Kept != catalog.MinMaxSkillBytes {
		t.Fatalf("invocation of a long skill: %+v", g.Result.Value)
	}
	if tool := catalog.Execute(context.Background(), l, "big", opts); tool.Text() != g.Result.Text() {
		t.Errorf("truncated invocation text differs from the tool's")
	}
}

// The templates with user invocation on: the line is the last before
// </system-reminder>, and the digest ignores it.
func TestRenderUserInvocation(t *testing.T) {
	entries := catalog.Entries(workedExample(), 50)
	for _, tc := range []struct {
		golden  string
		update  catalog.Update
		entries []catalog.Entry
	}{
		{"user-invocation-initial", catalog.UpdateInitial, entries},
		{"user-invocation-replacement", catalog.UpdateReplacement, entries},
		{"user-invocation-tombstone", catalog.UpdateReplacement, nil},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			on := catalog.RenderWith(tc.update, tc.entries, 0, true)
			off := catalog.RenderWith(tc.update, tc.entries, 0, false)
			golden(t, tc.golden, on)
			if off != catalog.Render(tc.update, tc.entries) {
				t.Errorf("RenderWith(off) differs from Render")
			}
			lines := strings.Split(on, "\n")
			offLines := strings.Split(off, "\n")
			if len(lines) != len(offLines)+1 || lines[len(lines)-1] != "</system-reminder>" {
				t.Fatalf("the line is not one more line before the end:\n%s", on)
			}
			if strings.Join(slices.Delete(slices.Clone(lines), len(lines)-2, len(lines)-1), "\n") != off {
				t.Errorf("with the line removed the text is not the text without it")
			}
			d1, ok1 := catalog.Recognize(on)
			d2, ok2 := catalog.Recognize(off)
			if !ok1 || !ok2 || d1 != d2 || d1 != catalog.Digest(tc.entries) {
				t.Errorf("digest with the line %q, without %q, of the entries %q", d1, d2, catalog.Digest(tc.entries))
			}
		})
	}
}

// The shortened form keeps the line outside the list: the limit and the
// digest are those of the catalog without it.
func TestRenderUserInvocationShortened(t *testing.T) {
	opts := catalog.DefaultOptions()
	opts.MaxLength = 250
	opts.UserInvocation = true
	snap := catalog.Snapshot{Skills: shortenSkills(), Complete: true}
	v := catalog.Prepare(snap, opts)
	d := catalog.DecideView(true, v, catalog.History{})
	golden(t, "user-invocation-shortened", d.Text)
	opts.UserInvocation = false
	off := catalog.Prepare(snap, opts)
	if v.Digest != off.Digest || v.Omitted != off.Omitted || !slices.Equal(v.Entries, off.Entries) {
		t.Errorf("the option changed the shortened list")
	}
	if !strings.HasSuffix(d.Text, "\nA user may also invoke a skill directly; its <skill_content> block then appears in this conversation. Follow it, and do not call the `skill` tool again for that skill.\n</system-reminder>") {
		t.Errorf("shortened catalog does not end with the line:\n%s", d.Text)
	}
	// A hidden tool's tombstone carries the tombstone's line.
	tomb := catalog.Decide(false, snap, catalog.History{Published: true, Visible: true, Digest: v.Digest}, catalog.Options{UserInvocation: true})
	if !strings.HasSuffix(tomb.Text, "\nA user may still invoke a skill directly; its <skill_content> block then appears in this conversation. Follow it, and do not call the `skill` tool for it.\n</system-reminder>") {
		t.Errorf("hidden-tool tombstone:\n%s", tomb.Text)
	}
}
