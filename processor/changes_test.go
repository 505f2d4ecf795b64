package processor

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// changesOn runs a processor with change lists.
func changesOn(c *Config, _ *options) {
	c.Catalog = catalog.DefaultOptions()
	c.Catalog.Updates = catalog.UpdatesChanges
}

// changesEnv is a test's world with n skills s00.. on disk.
func changesEnv(t *testing.T, n int) *env {
	t.Helper()
	e := newEnv(t)
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("s%02d", i)
		e.writeSkill(names[i], "Does thing "+strconv.Itoa(i)+".")
	}
	e.waitSkills(names...)
	return e
}

// changeSession is one session of a test.
type changeSession struct {
	t    testing.TB // of the (sub)test the session belongs to; e.t when nil
	e    *env
	w    *worker
	sid  string
	step int
}

func (s *changeSession) tb() testing.TB {
	if s.t != nil {
		return s.t
	}
	return s.e.t
}

func (s *changeSession) pre() events.Decision {
	s.tb().Helper()
	s.step++
	return s.w.preStep(events.PreStep{Session: s.sid, Step: strconv.Itoa(s.step), Cwd: s.e.cwd, Tools: ourTool()})
}

// want takes a pre-step and checks its outcome and, when it appended, its
// update kind.
func (s *changeSession) want(outcome, update string) events.Decision {
	s.tb().Helper()
	d := s.pre()
	if d.Outcome != outcome {
		s.tb().Fatalf("step %d: %s (%s), want %s", s.step, d.Outcome, d.Reason, outcome)
	}
	if update != "" && (d.Catalog == nil || d.Catalog.Source.Update != update) {
		s.tb().Fatalf("step %d: catalog %+v, want %s", s.step, d.Catalog, update)
	}
	return d
}

// edit changes skill name's description and waits for the registry.
func (s *changeSession) edit(name, desc string) {
	s.tb().Helper()
	s.e.writeSkill(name, desc)
	s.e.waitDescription(name, desc)
}

func (s *changeSession) catalogSeqs() []uint64 {
	var out []uint64
	for _, m := range s.e.outputs(s.sid, events.KindCatalog) {
		out = append(out, m.Sequence)
	}
	return out
}

// TestChangeLists: with change lists on, one edited, added or removed
// skill appends a change list naming it, with no entries and the updated
// list's digest and count; the decision names every record of the list
// and carries the whole list; the next step is unchanged. With the option
// off the same edit is a replacement.
func TestChangeLists(t *testing.T) {
	e := changesEnv(t, 4)
	e.start(changesOn)
	s := &changeSession{e: e, w: e.worker(), sid: "changes"}
	s.want(events.OutcomeAppended, "initial")
	base := s.catalogSeqs()[0]

	s.edit("s01", "Does thing one, better.")
	d := s.want(events.OutcomeAppended, events.UpdateChanges)
	src := d.Catalog.Source
	if src.Base != base || src.Entries != nil || src.Count != 4 ||
		!slices.Equal(src.Changes, []events.Change{{Name: "s01", Change: events.ChangeChanged, Description: "Does thing one, better."}}) {
		t.Fatalf("change list source %+v", src)
	}
	if !strings.Contains(d.Catalog.Text, "<skill_catalog_changes>\n- changed `s01`: Does thing one, better.\n</skill_catalog_changes>") {
		t.Fatalf("text:\n%s", d.Catalog.Text)
	}
	want := catalog.Prepare(catalog.Snapshot{Complete: true, Skills: []catalog.Summary{
		mi("s00", "Does thing 0."), mi("s01", "Does thing one, better."), mi("s02", "Does thing 2."), mi("s03", "Does thing 3.")}}, catalog.DefaultOptions())
	if src.Digest != want.Digest {
		t.Fatalf("digest %s, want the updated list's %s", src.Digest, want.Digest)
	}
	seqs := s.catalogSeqs()
	if !slices.Equal(d.CatalogSeqs, seqs) || d.CatalogSeq != seqs[1] || d.CurrentList == nil || d.CurrentList.Digest != want.Digest ||
		len(d.CurrentList.Entries) != 4 || d.CurrentList.Entries[1].Description != "Does thing one, better." {
		t.Fatalf("decision seqs %v (catalogs %v), current list %+v", d.CatalogSeqs, seqs, d.CurrentList)
	}
	// Stored as sent: no entries key at all.
	if raw := e.outputs(s.sid, events.KindCatalog)[1].Data; strings.Contains(string(raw), "entries") {
		t.Errorf("the change list's record holds entries")
	}
	d = s.want(events.OutcomeUnchanged, "")
	if !slices.Equal(d.CatalogSeqs, seqs) || d.CurrentList == nil || d.CurrentList.Digest != want.Digest {
		t.Fatalf("unchanged: seqs %v, current list %+v", d.CatalogSeqs, d.CurrentList)
	}

	e.writeSkill("s04", "Does thing 4.")
	e.waitSkills("s00", "s01", "s02", "s03", "s04")
	d = s.want(events.OutcomeAppended, events.UpdateChanges)
	if c := d.Catalog.Source.Changes; len(c) != 1 || c[0] != (events.Change{Name: "s04", Change: events.ChangeAdded, Description: "Does thing 4."}) || d.Catalog.Source.Base != base {
		t.Fatalf("added: %+v", d.Catalog.Source)
	}
	e.removeSkill("s00")
	e.waitSkills("s01", "s02", "s03", "s04")
	d = s.want(events.OutcomeAppended, events.UpdateChanges)
	if c := d.Catalog.Source.Changes; len(c) != 1 || c[0] != (events.Change{Name: "s00", Change: events.ChangeRemoved}) || len(d.CatalogSeqs) != 4 {
		t.Fatalf("removed: %+v, seqs %v", d.Catalog.Source, d.CatalogSeqs)
	}
	if !strings.Contains(d.Catalog.Text, "\n- removed `s00`\n") {
		t.Fatalf("text:\n%s", d.Catalog.Text)
	}
	// More than half of the list: a replacement, which starts a new chain.
	for _, n := range []string{"s01", "s02", "s03"} {
		s.edit(n, "Edited "+n+".")
	}
	d = s.want(events.OutcomeAppended, "replacement")
	if d.CatalogSeqs != nil || d.CurrentList != nil {
		t.Fatalf("a replacement names seqs %v", d.CatalogSeqs)
	}
	s.want(events.OutcomeUnchanged, "")

	// Off: the same edit in another session of a processor without the
	// option is a replacement.
	e2 := changesEnv(t, 4)
	e2.start()
	s2 := &changeSession{e: e2, w: e2.worker(), sid: "full"}
	s2.want(events.OutcomeAppended, "initial")
	s2.edit("s01", "Does thing one, better.")
	s2.want(events.OutcomeAppended, "replacement")
}

func mi(name, desc string) catalog.Summary {
	return catalog.Summary{Name: name, Description: desc, Invocation: catalog.Invocation{ModelInvocable: true}}
}

// TestChangeListReads: an unchanged pre-step reads as much after 15
// change lists as after one; the next change is a replacement.
func TestChangeListReads(t *testing.T) {
	e := changesEnv(t, 4)
	p := e.start(changesOn)
	s := &changeSession{e: e, w: e.worker(), sid: "reads"}
	s.want(events.OutcomeAppended, "initial")
	reads := func() uint64 {
		t.Helper()
		s.want(events.OutcomeUnchanged, "") // the first after a change may learn the chain
		before := p.rd.reads.Load()
		d := s.want(events.OutcomeUnchanged, "")
		if d.CurrentList == nil {
			t.Fatal("no current list")
		}
		return p.rd.reads.Load() - before
	}
	var after1 uint64
	for i := 1; i <= catalog.MaxChangeLists; i++ {
		s.edit("s01", fmt.Sprintf("Edit number %d.", i))
		d := s.want(events.OutcomeAppended, events.UpdateChanges)
		if len(d.CatalogSeqs) != i+1 {
			t.Fatalf("change list %d: seqs %v", i, d.CatalogSeqs)
		}
		if i == 1 {
			after1 = reads()
		}
	}
	after15 := reads()
	t.Logf("reads per unchanged pre-step: %d after one change list, %d after 15", after1, after15)
	if after15 != after1 {
		t.Errorf("an unchanged pre-step reads %d times after 15 change lists, %d after one", after15, after1)
	}
	s.edit("s01", "Edit number 16.")
	s.want(events.OutcomeAppended, "replacement")
	s.edit("s01", "Edit number 17.")
	s.want(events.OutcomeAppended, events.UpdateChanges)
}

// TestChangeListCompaction: a compaction that keeps every record of the
// list keeps it; one that keeps only the newest (or masks the base)
// makes the next pre-step re-establish it with one replacement.
func TestChangeListCompaction(t *testing.T) {
	for name, mutate := range map[string][]func(*Config, *options){"full reads": {changesOn}, "heads": {changesOn, headsOn}} {
		t.Run(name, func(t *testing.T) {
			e := changesEnv(t, 4)
			e.start(mutate...)
			s := &changeSession{t: t, e: e, w: e.worker(), sid: "compact"}
			s.want(events.OutcomeAppended, "initial")
			s.edit("s01", "Edited.")
			d := s.want(events.OutcomeAppended, events.UpdateChanges)
			all := d.CatalogSeqs
			s.w.compact(s.sid, s.w.note(s.sid, "retained"), all...)
			s.want(events.OutcomeUnchanged, "")
			s.w.compact(s.sid, s.w.note(s.sid, "retained again"), d.CatalogSeq)
			d = s.want(events.OutcomeAppended, "replacement")
			if !strings.Contains(d.Catalog.Text, "- `s01`: Edited.") {
				t.Fatalf("replacement:\n%s", d.Catalog.Text)
			}
			s.want(events.OutcomeUnchanged, "")
			// A compaction between base and change list masks the base.
			s.edit("s02", "Edited too.")
			d = s.want(events.OutcomeAppended, events.UpdateChanges)
			s.w.compact(s.sid, d.CatalogSeq)
			s.want(events.OutcomeAppended, "replacement")
			s.want(events.OutcomeUnchanged, "")
		})
	}
}

// TestChangeListFaults: a change list whose chain does not hold (a forged
// one on the wrong base, one whose digest its changes do not give, one
// whose base was purged) is never trusted: the next pre-step re-establishes
// the list with one replacement, and nothing crashes.
func TestChangeListFaults(t *testing.T) {
	e := changesEnv(t, 4)
	e.start(changesOn)
	w := e.worker()
	forge := func(sid string, base uint64, digest string) {
		t.Helper()
		c := events.Catalog{V: 1, Session: sid, Step: "forged", ID: "forged", Role: "user",
			Text: catalog.RenderChanges([]catalog.Change{{Name: "s01", Kind: catalog.ChangeChanged, Description: "Forged."}}, "", false),
			Source: events.CatalogSource{Kind: events.SourceKindCatalog, Producer: DefaultToolOwner, Update: events.UpdateChanges,
				Base: base, Changes: []events.Change{{Name: "s01", Change: events.ChangeChanged, Description: "Forged."}}, Count: 4, Digest: digest}}
		data, err := events.Encode(events.Msgpack, c)
		if err != nil {
			t.Fatal(err)
		}
		publishRaw(t, e, events.Subject(events.DefaultPrefix, sid, events.KindCatalog), data, nats.Header{events.HeaderContentType: {events.ContentTypeMsgpack}})
	}
	for _, tc := range []struct {
		name  string
		fault func(s *changeSession)
	}{
		{"wrong base", func(s *changeSession) {
			// The digest is the one the model's list has now, so that
			// trusting it would answer unchanged.
			forge(s.sid, s.w.note(s.sid, "not a catalog"), e.catalogs(s.sid)[0].Source.Digest)
		}},
		{"wrong digest", func(s *changeSession) {
			forge(s.sid, s.catalogSeqs()[0], strings.Repeat("ab", 32))
		}},
		{"base purged", func(s *changeSession) {
			s.edit("s02", "Edited.")
			s.want(events.OutcomeAppended, events.UpdateChanges)
			s.want(events.OutcomeUnchanged, "") // the chain is known
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			st, err := e.js.Stream(ctx, "SESSIONS")
			if err != nil {
				t.Fatal(err)
			}
			if err := st.DeleteMsg(ctx, s.catalogSeqs()[0]); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &changeSession{t: t, e: e, w: w, sid: strings.ReplaceAll(tc.name, " ", "-")}
			s.want(events.OutcomeAppended, "initial")
			tc.fault(s)
			d := s.want(events.OutcomeAppended, "replacement")
			if d.CatalogSeqs != nil {
				t.Errorf("a replacement names seqs %v", d.CatalogSeqs)
			}
			s.want(events.OutcomeUnchanged, "")
		})
	}
}

// TestChangeListExactlyOnce: a member killed between appending a change
// list and answering, and a worker's retry, get the change list already
// appended, with its records and list; a member that did not append the
// chain (a restart, another member) decides the same change the same way.
func TestChangeListExactlyOnce(t *testing.T) {
	e := changesEnv(t, 4)
	const sid = "once"
	hook, crashes := crashOnce(sid)
	stopA := e.startStoppable(changesOn)
	s := &changeSession{e: e, w: e.worker(), sid: sid}
	s.want(events.OutcomeAppended, "initial")
	stopA()

	// A member that crashes after its first append to the session.
	stopB := e.startStoppable(changesOn, hook)
	s.edit("s01", "Edited.")
	d := s.want(events.OutcomeAppended, events.UpdateChanges)
	if crashes.Load() != 1 {
		t.Fatal("the hook did not crash")
	}
	if len(d.CatalogSeqs) != 2 || d.CurrentList == nil {
		t.Fatalf("redelivered: seqs %v, list %+v", d.CatalogSeqs, d.CurrentList)
	}
	// The worker's retry of the same step.
	again := s.w.preStep(events.PreStep{Session: sid, Step: strconv.Itoa(s.step), Cwd: e.cwd, Tools: ourTool()})
	if again.Outcome != events.OutcomeAppended || again.CatalogSeq != d.CatalogSeq || !slices.Equal(again.CatalogSeqs, d.CatalogSeqs) ||
		again.CurrentList == nil || again.CurrentList.Digest != d.CurrentList.Digest {
		t.Fatalf("retry: %+v", again)
	}
	if n := len(e.outputs(sid, events.KindCatalog)); n != 2 {
		t.Fatalf("%d catalogs, want 2", n)
	}
	stopB()

	// Members in turn, each new to the session: the next change is a
	// change list on the same base, whichever decides it.
	for i, name := range []string{"s02", "s03"} {
		stop := e.startStoppable(changesOn)
		s.want(events.OutcomeUnchanged, "")
		s.edit(name, "Edited by member "+strconv.Itoa(i)+".")
		d := s.want(events.OutcomeAppended, events.UpdateChanges)
		if d.Catalog.Source.Base != s.catalogSeqs()[0] || len(d.CatalogSeqs) != 3+i {
			t.Fatalf("member %d: %+v seqs %v", i, d.Catalog.Source, d.CatalogSeqs)
		}
		stop()
	}
}

// startStoppable starts a processor like start, and returns a function
// that stops it (waiting for Run to return).
func (e *env) startStoppable(mutate ...func(*Config, *options)) func() {
	e.t.Helper()
	cfg := e.cfg
	o := options{}
	for _, m := range mutate {
		m(&cfg, &o)
	}
	p, err := New(e.srv.Connect(), e.registry, cfg, WithLogger(quietLogger()), WithVersion(o.version))
	if err != nil {
		e.t.Fatal(err)
	}
	p.hooks = o.hooks
	if o.headMin != 0 {
		p.headMin = max(o.headMin, 0)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	select {
	case <-p.Ready():
	case err := <-done:
		cancel()
		e.t.Fatalf("Run: %v", err)
	case <-time.After(waitTimeout):
		cancel()
		e.t.Fatal("processor not ready")
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("Run: %v", err)
		}
	}
	e.t.Cleanup(stop)
	return stop
}
