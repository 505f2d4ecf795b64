package catalog_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
)

// changesOpts are the default options with change lists on.
func changesOpts() catalog.Options {
	o := catalog.DefaultOptions()
	o.Updates = catalog.UpdatesChanges
	return o
}

// many returns n model-invocable skills s000.. with a description each.
func many(n int, desc func(i int) string) []catalog.Summary {
	out := make([]catalog.Summary, n)
	for i := range out {
		out[i] = mi(fmt.Sprintf("s%03d", i), desc(i))
	}
	return out
}

func plainDesc(i int) string { return fmt.Sprintf("Does thing number %d.", i) }

// current is the history of a session whose visible current list is the
// one v shows, after changes change lists.
func current(v catalog.View, changes int) catalog.History {
	l := catalog.ListOf(v)
	return catalog.History{Published: true, Visible: true, Digest: v.Digest, Current: &l, Changes: changes}
}

// TestDecideChanges: with change lists on, a small change to the current
// list is a change list, and every condition that forbids one gives the
// full replacement.
func TestDecideChanges(t *testing.T) {
	base := many(10, plainDesc)
	edit := func(i int, d string) []catalog.Summary {
		s := append([]catalog.Summary(nil), base...)
		s[i].Description = d
		return s
	}
	editN := func(n int) []catalog.Summary {
		s := append([]catalog.Summary(nil), base...)
		for i := range n {
			s[i].Description = "Edited."
		}
		return s
	}
	prep := func(o catalog.Options, s []catalog.Summary) catalog.View { return catalog.Prepare(complete(s...), o) }
	on, off := changesOpts(), catalog.DefaultOptions()
	curOn := current(prep(on, base), 0)
	curOff := current(prep(off, base), 0)
	cases := []struct {
		name   string
		opts   catalog.Options
		skills []catalog.Summary
		h      catalog.History
		want   catalog.Update
	}{
		{"off by default", off, edit(3, "New."), curOff, catalog.UpdateReplacement},
		{"one edit", on, edit(3, "New."), curOn, catalog.UpdateChanges},
		{"one added", on, append(append([]catalog.Summary(nil), base...), mi("zz", "Z.")), curOn, catalog.UpdateChanges},
		{"one removed", on, base[1:], curOn, catalog.UpdateChanges},
		{"half of the shown entries", on, editN(5), curOn, catalog.UpdateChanges},
		{"more than half of them", on, editN(6), curOn, catalog.UpdateReplacement},
		{"more than half", on, base[:4], curOn, catalog.UpdateReplacement}, // 6 removed of 4 shown
		{"current list unknown", on, edit(3, "New."), catalog.History{Published: true, Visible: true, Digest: curOn.Digest}, catalog.UpdateReplacement},
		{"current list masked", on, edit(3, "New."), catalog.History{Published: true, Current: curOn.Current}, catalog.UpdateReplacement},
		{"14 change lists", on, edit(3, "New."), current(prep(on, base), 14), catalog.UpdateChanges},
		{"15 change lists", on, edit(3, "New."), current(prep(on, base), 15), catalog.UpdateReplacement},
		{"nothing published", on, base, catalog.History{}, catalog.UpdateInitial},
		{"tombstone", on, nil, curOn, catalog.UpdateReplacement},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := catalog.DecideView(true, prep(c.opts, c.skills), c.h)
			if d.Outcome != catalog.OutcomeAppended || d.Update != c.want {
				t.Fatalf("%s %s, want appended %s:\n%s", d.Outcome, d.Update, c.want, d.Text)
			}
			if c.want != catalog.UpdateChanges && d.Text != catalog.Decide(true, complete(c.skills...), c.h, off).Text {
				t.Errorf("not the text a replacement has without change lists:\n%s", d.Text)
			}
		})
	}
	// Unchanged is unchanged, and a hidden tool still gets the tombstone.
	if d := catalog.DecideView(true, prep(on, base), curOn); d.Outcome != catalog.OutcomeUnchanged {
		t.Errorf("same list: %s", d.Outcome)
	}
	if d := catalog.Decide(false, complete(base...), curOn, on); d.Update != catalog.UpdateReplacement || d.Text != catalog.Render(catalog.UpdateReplacement, nil) {
		t.Errorf("hidden tool: %s\n%s", d.Update, d.Text)
	}
}

// TestChangeListBound: at most 64 skills, whatever the list's size.
func TestChangeListBound(t *testing.T) {
	o := changesOpts()
	o.MaxLength = 0
	base := many(300, plainDesc)
	cur := current(catalog.Prepare(complete(base...), o), 0)
	for _, n := range []int{64, 65} {
		s := append([]catalog.Summary(nil), base...)
		for i := range n {
			s[i].Description = "Edited."
		}
		d := catalog.DecideView(true, catalog.Prepare(complete(s...), o), cur)
		want := catalog.UpdateChanges
		if n > catalog.MaxChanges {
			want = catalog.UpdateReplacement
		}
		if d.Update != want || (want == catalog.UpdateChanges && len(d.Changes) != n) {
			t.Errorf("%d edits: %s with %d changes, want %s", n, d.Update, len(d.Changes), want)
		}
	}
}

// TestChangeListText: the exact texts, for each form (golden files), and
// each reads back to the list the model then has.
func TestChangeListText(t *testing.T) {
	a, b, c := mi("a-skill", "Use {{placeholder}} <safely> & carefully."), mi("b-skill", "Does B."), mi("c-skill", "Does C.")
	b2, d := mi("b-skill", "Does B, better."), mi("d-skill", "New & <shiny>.")

	t.Run("changes", func(t *testing.T) {
		o := changesOpts()
		e, f := mi("e-skill", "Does E."), mi("f-skill", "Does F.")
		cur := current(catalog.Prepare(complete(a, b, c, e, f), o), 0)
		dec := catalog.DecideView(true, catalog.Prepare(complete(b2, c, d, e, f), o), cur)
		golden(t, "changes", dec.Text)
		checkReadBack(t, cur, dec)
	})
	t.Run("user invocation", func(t *testing.T) {
		o := changesOpts()
		o.UserInvocation = true
		cur := current(catalog.Prepare(complete(a, b, c), o), 0)
		dec := catalog.DecideView(true, catalog.Prepare(complete(a, b2, c), o), cur)
		golden(t, "changes-user-invocation", dec.Text)
		checkReadBack(t, cur, dec)
	})
	t.Run("shortened", func(t *testing.T) {
		// Under the size limit an added entry may be shown bare, and the
		// notice, which changed, is the last line.
		o := changesOpts()
		o.MaxLength = 250
		skills := shortenSkills()
		cur := current(catalog.Prepare(complete(skills...), o), 0)
		more := append(append([]catalog.Summary(nil), skills...), sized("custom-b", catalog.SourceCustom, "Another custom skill."+detail))
		dec := catalog.DecideView(true, catalog.Prepare(complete(more...), o), cur)
		if dec.Update != catalog.UpdateChanges || dec.Notice == "" || !strings.Contains(dec.Text, "\n- added `custom-b`\n") {
			t.Fatalf("%s notice %q:\n%s", dec.Update, dec.Notice, dec.Text)
		}
		golden(t, "changes-shortened", dec.Text)
		checkReadBack(t, cur, dec)
	})
	t.Run("search notice", func(t *testing.T) {
		o := changesOpts()
		o.SkillSearch, o.SearchOffered, o.ListedMax = true, true, 2
		cur := current(catalog.Prepare(complete(a, b, c), o), 0)
		dec := catalog.DecideView(true, catalog.Prepare(complete(a, b2, c, d), o), cur)
		golden(t, "changes-search-notice", dec.Text)
		checkReadBack(t, cur, dec)
	})
	t.Run("notice lost", func(t *testing.T) {
		o := changesOpts()
		o.MaxLength = 250
		skills := shortenSkills()
		cur := current(catalog.Prepare(complete(skills...), o), 0)
		dec := catalog.DecideView(true, catalog.Prepare(complete(skills[:2]...), o), cur)
		if dec.Update != catalog.UpdateReplacement {
			t.Fatalf("a list that lost its notice: %s, want a replacement", dec.Update)
		}
	})
}

// checkReadBack checks that a change list's text reads back as its
// changes, and that they make of the current list the one decided.
func checkReadBack(t *testing.T, cur catalog.History, d catalog.Decision) {
	t.Helper()
	if d.Update != catalog.UpdateChanges {
		t.Fatalf("%s, want changes:\n%s", d.Update, d.Text)
	}
	changes, notice, ok := catalog.ParseChanges(d.Text)
	if !ok || !reflect.DeepEqual(changes, d.Changes) || notice != d.Notice {
		t.Fatalf("read back %v %+v %q, want %+v %q", ok, changes, notice, d.Changes, d.Notice)
	}
	if _, ok := catalog.Recognize(d.Text); ok {
		t.Errorf("a change list reads as a full catalog")
	}
	next, ok := cur.Current.Apply(changes, notice)
	if !ok || next.Digest() != d.Digest {
		t.Fatalf("applied: %v, digest %s, want %s", ok, next.Digest(), d.Digest)
	}
}

// TestParseList: a rendered list reads back as it was shown, and a text
// Render could not have written does not read at all.
func TestParseList(t *testing.T) {
	o := catalog.DefaultOptions()
	o.MaxLength = 250
	v := catalog.Prepare(complete(shortenSkills()...), o)
	for _, u := range []catalog.Update{catalog.UpdateInitial, catalog.UpdateReplacement} {
		l, ok := catalog.ParseList(v.Text(u))
		if !ok || !reflect.DeepEqual(l, catalog.ListOf(v)) || l.Digest() != v.Digest {
			t.Errorf("%s: %v %+v, want %+v", u, ok, l, catalog.ListOf(v))
		}
	}
	if l, ok := catalog.ParseList(catalog.Render(catalog.UpdateReplacement, nil)); !ok || len(l.Entries) != 0 || l.Digest() != catalog.Digest(nil) {
		t.Errorf("tombstone: %v %+v", ok, l)
	}
	wrap := func(inner string) string {
		return "<system-reminder>\nx\n\n<available_skills>\n" + inner + "\n</available_skills>\n\ny\n</system-reminder>"
	}
	for _, bad := range []string{
		"- `b-skill`: B.\n- `a-skill`: A.", // out of order
		"- `a-skill`: A.\n- `a-skill`: A.", // twice
		"- `a-skill`: a < b",               // not escaped
		"- `a-skill`: fish &chips",         // a bare ampersand
		"(Shortened to fit the catalog size limit: 0 skills listed without a description, 1 skills not listed. Any available skill can still be loaded with the skill tool by its exact name.)\n- `a-skill`: A.",
	} {
		if l, ok := catalog.ParseList(wrap(bad)); ok {
			t.Errorf("%q read as %+v", bad, l)
		}
	}
	for _, bad := range []string{
		"- added `b-skill`: B.\n- removed `a-skill`", // out of order
		"- renamed `a-skill`",
		"- removed `a-skill`: A.",
		"- added `A`: A.",
		"",
	} {
		text := "<system-reminder>\nx\n\n<skill_catalog_changes>\n" + bad + "\n</skill_catalog_changes>\n</system-reminder>"
		if c, _, ok := catalog.ParseChanges(text); ok {
			t.Errorf("%q read as %+v", bad, c)
		}
	}
	l := catalog.List{Entries: []catalog.Entry{{Name: "a", Description: "A."}}}
	for _, c := range [][]catalog.Change{
		{{Name: "a", Kind: catalog.ChangeAdded, Description: "again"}},
		{{Name: "b", Kind: catalog.ChangeChanged, Description: "B"}},
		{{Name: "b", Kind: catalog.ChangeRemoved}},
	} {
		if got, ok := l.Apply(c, ""); ok {
			t.Errorf("%+v applied to %+v: %+v", c, l, got)
		}
	}
}

// TestUpdatesOption: "full", "changes" and "" are the values.
func TestUpdatesOption(t *testing.T) {
	for _, u := range []catalog.Updates{"", catalog.UpdatesFull, catalog.UpdatesChanges} {
		o := catalog.DefaultOptions()
		o.Updates = u
		if err := o.Validate(); err != nil {
			t.Errorf("%q: %v", u, err)
		}
	}
	o := catalog.DefaultOptions()
	o.Updates = "diff"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), `must be "full" or "changes"`) {
		t.Errorf("diff: %v", err)
	}
}
