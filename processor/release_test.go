package processor

import (
	"strconv"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/providertest"
)

// releaseTenant is the tenant of the release tests' processor.
const releaseTenant = "acme"

// releasing gives e a registry over one releasing provider: "deploy" with
// a candidate whose text is the stable's (only the body differs) offered
// to half of the sessions, and "lint" with no release.
func releasing(e *env) (*providertest.Releases, catalog.Release) {
	e.t.Helper()
	rp := providertest.NewReleases("store",
		providertest.Released{Name: "deploy",
			Stable:    &providertest.Revision{Rev: 1, Description: "Deploy the app.", Body: "Stable steps."},
			Candidate: &providertest.Revision{Rev: 2, Description: "Deploy the app.", Body: "Candidate steps."},
			Share:     catalog.FullShare / 2},
		providertest.Released{Name: "lint", Stable: &providertest.Revision{Rev: 3, Description: "Lint the code.", Body: "Lint steps."}})
	e.registry = providers.NewRegistry([]providers.Provider{rp}, providers.WithLogger(quietLogger()))
	r := e.registry
	e.t.Cleanup(func() { r.Close() })
	return rp, rp.Releases(catalog.Query{})[0]
}

// cohortSessions returns a session in rel's canary and one outside it.
func cohortSessions(t testing.TB, rel catalog.Release) (canary, stable string) {
	for i := 0; canary == "" || stable == ""; i++ {
		sid := "rel-" + strconv.Itoa(i)
		if catalog.InCanary(releaseTenant, sid, rel) {
			canary = sid
		} else {
			stable = sid
		}
	}
	return canary, stable
}

// Each session is given the revision its cohort takes: the catalog record
// names each entry's revision and channel, the skill result and its
// Usage-Summary header the loaded one's; two sessions shown the same text
// from different revisions get the same text and each its own evidence.
func TestReleaseEvidencePerSession(t *testing.T) {
	e := newEnv(t)
	_, rel := releasing(e)
	e.start(func(c *Config, _ *options) { c.Tenant = releaseTenant })
	w := e.worker()
	canary, stable := cohortSessions(t, rel)

	want := map[string][]events.EntryOrigin{
		canary: {{Name: "deploy", Rev: 2, Digest: rel.Candidate, Channel: catalog.ChannelCanary}},
		stable: {{Name: "deploy", Rev: 1, Channel: catalog.ChannelStable}},
	}
	var texts []string
	for _, sid := range []string{canary, stable} {
		d := w.preStep(events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool()})
		if d.Outcome != events.OutcomeAppended || d.Catalog == nil {
			t.Fatalf("%s: outcome %s, want a catalog appended", sid, d.Outcome)
		}
		texts = append(texts, d.Catalog.Text)
		got := d.Catalog.Source.Origins
		if len(got) != 2 || got[0].Name != "deploy" || got[1].Name != "lint" {
			t.Fatalf("%s: origins %+v, want deploy's and lint's", sid, got)
		}
		if w := want[sid][0]; got[0].Rev != w.Rev || got[0].Channel != w.Channel || (w.Digest != "" && got[0].Digest != w.Digest) {
			t.Errorf("%s: deploy's origin %+v, want %+v", sid, got[0], w)
		}
		if got[1].Rev != 3 || got[1].Channel != catalog.ChannelStable {
			t.Errorf("%s: lint's origin %+v, want rev 3, stable", sid, got[1])
		}
		// The record in the log says the same.
		rec := lastOf(t, e, sid, events.KindCatalog)
		c, err := events.DecodeCatalog(events.Msgpack, rec.Data)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Source.Origins) != 2 || c.Source.Origins[0] != got[0] {
			t.Errorf("%s: recorded origins %+v, answered %+v", sid, c.Source.Origins, got)
		}

		r := w.call(events.SkillCall{Session: sid, Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "deploy"}})
		if r.Value == nil {
			t.Fatalf("%s: load failed: %s", sid, r.Text)
		}
		wantRev, wantChannel, wantBody := uint64(1), catalog.ChannelStable, "Stable steps."
		if sid == canary {
			wantRev, wantChannel, wantBody = 2, catalog.ChannelCanary, "Candidate steps."
		}
		if r.Value.Rev != wantRev || r.Value.Channel != wantChannel || r.Value.Content != wantBody {
			t.Errorf("%s: loaded rev %d channel %q body %q, want %d %q %q", sid, r.Value.Rev, r.Value.Channel, r.Value.Content, wantRev, wantChannel, wantBody)
		}
		u, err := events.ParseUsageSummary(lastOf(t, e, sid, events.KindToolResult).Header.Get(events.HeaderUsageSummary))
		if err != nil {
			t.Fatal(err)
		}
		headerChannel := ""
		if sid == canary {
			headerChannel = catalog.ChannelCanary
		}
		if u.Rev != wantRev || u.Channel != headerChannel {
			t.Errorf("%s: Usage-Summary rev %d channel %q, want %d %q", sid, u.Rev, u.Channel, wantRev, headerChannel)
		}
	}
	if texts[0] != texts[1] {
		t.Errorf("the two sessions were shown different texts:\n%s\n---\n%s", texts[0], texts[1])
	}
}

// With no release anywhere a session's query has no Canary: the same view
// and records as before releases existed.
func TestNoReleaseNoCohort(t *testing.T) {
	e := newEnv(t)
	rp, _ := releasing(e)
	rp.Set(providertest.Released{Name: "deploy", Stable: &providertest.Revision{Rev: 1, Description: "Deploy the app.", Body: "Stable steps."}})
	p := e.start(func(c *Config, _ *options) { c.Tenant = releaseTenant })
	q := catalog.Query{Cwd: e.cwd}
	if got := p.cohort("any", q); got != q {
		t.Errorf("cohort without releases = %+v, want %+v", got, q)
	}
	d := e.worker().preStep(events.PreStep{Session: "s", Step: "1", Cwd: e.cwd, Tools: ourTool()})
	if d.Catalog == nil || len(d.Catalog.Source.Origins) != 2 || d.Catalog.Source.Origins[0].Channel != catalog.ChannelStable {
		t.Fatalf("decision %+v: want a catalog with both stable origins", d)
	}
}

// lastOf is the newest event of kind k in session sid.
func lastOf(t testing.TB, e *env, sid string, k events.Kind) *jetstream.RawStreamMsg {
	t.Helper()
	ms := e.outputs(sid, k)
	if len(ms) == 0 {
		t.Fatalf("no %s in session %s", k, sid)
	}
	return ms[len(ms)-1]
}

// A user's /name invocation loads the session's revision too.
func TestReleaseInvocation(t *testing.T) {
	e := newEnv(t)
	_, rel := releasing(e)
	e.start(func(c *Config, _ *options) {
		c.Tenant = releaseTenant
		c.Catalog = catalog.DefaultOptions()
		c.Catalog.UserInvocation = true
	})
	w := e.worker()
	canary, stable := cohortSessions(t, rel)
	for sid, want := range map[string]string{canary: "Candidate steps.", stable: "Stable steps."} {
		d := w.preStep(events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool(), UserText: []string{"/deploy"}})
		if len(d.Invocations) != 1 {
			t.Fatalf("%s: invocations %+v", sid, d.Invocations)
		}
		inv := d.Invocations[0].WithContent()
		if inv.Value.Content != want || (sid == canary) != (inv.Value.Channel == catalog.ChannelCanary) {
			t.Errorf("%s: invoked %q (rev %d, %s), want %q", sid, inv.Value.Content, inv.Value.Rev, inv.Value.Channel, want)
		}
	}
}

// Asked by another member for a session's view, a member answers with the
// revisions that session takes: the same digest the session's own
// pre-step decides, not the stable one.
func TestReleaseViewForSession(t *testing.T) {
	e := newEnv(t)
	rp, rel := releasing(e)
	// The candidate's text differs, so that the two views do.
	rp.Set(providertest.Released{Name: "deploy", Share: rel.Share,
		Stable:    &providertest.Revision{Rev: 1, Description: "Deploy the app.", Body: "Stable steps."},
		Candidate: &providertest.Revision{Rev: 2, Description: "Deploy the app, safely.", Body: "Candidate steps."}})
	rel = rp.Releases(catalog.Query{})[0]
	p := e.start(func(c *Config, _ *options) { c.Tenant = releaseTenant })
	canary, stable := cohortSessions(t, rel)
	w := e.worker()
	digest := map[string]string{}
	for _, sid := range []string{canary, stable} {
		d := w.preStep(events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool()})
		if d.Catalog == nil {
			t.Fatalf("%s: no catalog", sid)
		}
		digest[sid] = d.Catalog.Source.Digest
	}
	if digest[canary] == digest[stable] {
		t.Fatal("the canary's and the stable's views have the same digest")
	}
	for _, tc := range []struct{ session, want string }{{canary, digest[canary]}, {stable, digest[stable]}, {"", digest[stable]}} {
		body, err := events.Encode(events.JSON, events.ViewRequest{V: 1, Cwd: e.cwd, Session: tc.session})
		if err != nil {
			t.Fatal(err)
		}
		if r := p.answerView(body, events.ContentTypeJSON); r.Error != "" || r.Digest != tc.want {
			t.Errorf("view for session %q: %+v, want digest %s", tc.session, r, tc.want)
		}
	}
	body, _ := events.Encode(events.JSON, events.ViewRequest{V: 1, Cwd: e.cwd, Session: "bad session\n"})
	if r := p.answerView(body, events.ContentTypeJSON); r.Error == "" {
		t.Errorf("a bad session id was answered: %+v", r)
	}
}
