package replay

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/providertest"
)

// releaseSkills are a store with "deploy" in a release whose candidate has
// the stable's text (only the body differs: the evidence alone tells
// them apart), offered to half of the sessions, and "lint" stable.
func releaseSkills(t testing.TB) (*providers.Registry, catalog.Release) {
	rp := providertest.NewReleases("store",
		providertest.Released{Name: "deploy", Share: catalog.FullShare / 2,
			Stable:    &providertest.Revision{Rev: 1, Description: "Deploy the app.", Body: "Stable steps."},
			Candidate: &providertest.Revision{Rev: 2, Description: "Deploy the app.", Body: "Candidate steps."}},
		providertest.Released{Name: "lint", Stable: &providertest.Revision{Rev: 3, Description: "Lint the code.", Body: "Lint steps."}})
	reg := providers.NewRegistry([]providers.Provider{rp})
	t.Cleanup(func() { reg.Close() })
	return reg, rp.Releases(catalog.Query{})[0]
}

// A session recorded while a canary was on, by the real processor of
// tenant "acme": replayed as recorded, and against the same store and
// release state with the session's tenant, it differs nowhere, its
// revisions compared; placed in another cohort (another tenant), the same
// text from another revision is a difference; history shows the canary.
func TestReplayRebuildsCohorts(t *testing.T) {
	srv := natstest.Start(t)
	reg, rel := releaseSkills(t)
	p, err := processor.New(srv.Conn, reg, processor.Config{Tenant: "acme", Catalog: catalog.DefaultOptions()}, processor.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, p)
	waitStream(t, srv.JS, processor.DefaultStream)
	sid := ""
	for i := 0; sid == ""; i++ {
		if s := "canary-" + strconv.Itoa(i); catalog.InCanary("acme", s, rel) && !catalog.InCanary("other", s, rel) {
			sid = s
		}
	}
	w := &worker{t: t, nc: srv.Conn, js: srv.JS, sid: sid, cwd: "/work/app"}
	tools := []events.Tool{{Name: "skill", Owner: processor.DefaultToolOwner}}
	if got := w.preStep("1", tools); got != "appended" {
		t.Fatalf("step 1: %s", got)
	}
	if !w.call("c1", "deploy") || !w.call("c2", "lint") {
		t.Fatal("a load failed")
	}
	var rec bytes.Buffer
	if err := Record(context.Background(), srv.JS, processor.DefaultStream, events.DefaultPrefix, sid, &rec); err != nil {
		t.Fatal(err)
	}

	steps, sum := replayBytes(t, rec.Bytes(), Options{AsRecorded: true})
	if sum.Differ != 0 || sum.Triggers != 3 {
		t.Errorf("as recorded: %+v\n%s", sum, outcomes(steps))
	}
	steps, sum = replayBytes(t, rec.Bytes(), Options{Skills: reg, Tenant: "acme"})
	if sum.Differ != 0 || sum.Triggers != 3 {
		t.Errorf("against the same release state: %+v\n%s", sum, outcomes(steps))
	}
	if o := steps[0].Recorded.Origins; len(o) != 2 || o[0].Channel != catalog.ChannelCanary || o[0].Rev != 2 {
		t.Errorf("recorded origins %+v, want deploy's canary rev 2 first", o)
	}
	if got, want := OriginsText(steps[0].Replayed.Origins), OriginsText(steps[0].Recorded.Origins); got != want {
		t.Errorf("replayed origins %q, recorded %q", got, want)
	}
	if s := steps[1]; s.Recorded.Rev != 2 || s.Recorded.Channel != catalog.ChannelCanary || s.Replayed.Rev != 2 {
		t.Errorf("deploy's load: recorded rev %d %q, replayed rev %d %q", s.Recorded.Rev, s.Recorded.Channel, s.Replayed.Rev, s.Replayed.Channel)
	}

	// Another tenant places the session outside the canary: the same
	// text, from the stable revision.
	steps, sum = replayBytes(t, rec.Bytes(), Options{Skills: reg, Tenant: "other"})
	if sum.Differ != 2 || !steps[0].Differs || !steps[1].Differs || steps[2].Differs {
		t.Fatalf("in another cohort: %+v, want the catalog and deploy's load to differ\n%s", sum, outcomes(steps))
	}
	if d := steps[0].Diff; !strings.Contains(d, "-deploy rev 2 (canary)") || !strings.Contains(d, "+deploy rev 1 (stable)") {
		t.Errorf("catalog's diff:\n%s", d)
	}
	if s := steps[1]; s.Replayed.Rev != 1 || s.Replayed.Channel != catalog.ChannelStable || !strings.Contains(s.Diff, "+Stable steps.") {
		t.Errorf("load replayed rev %d %q, diff:\n%s", s.Replayed.Rev, s.Replayed.Channel, s.Diff)
	}

	// history: the step's canary entry and load.
	steps, _ = replayBytes(t, rec.Bytes(), Options{HistoryOnly: true})
	var ds Deltas
	var deltas []*Delta
	for _, s := range steps {
		if d := ds.Add(s); d != nil {
			deltas = append(deltas, d)
		}
	}
	if d := ds.Finish(); d != nil {
		deltas = append(deltas, d)
	}
	last := deltas[len(deltas)-1]
	if len(last.Revisions) != 1 || last.Revisions[0].Name != "deploy" || last.Revisions[0].Channel != catalog.ChannelCanary {
		t.Errorf("history's revisions %+v, want deploy's canary", last.Revisions)
	}
	if len(last.Loads) != 2 || last.Loads[0].Channel != catalog.ChannelCanary || last.Loads[0].Rev != 2 || last.Loads[1].Channel != catalog.ChannelStable {
		t.Errorf("history's loads %+v", last.Loads)
	}
}
