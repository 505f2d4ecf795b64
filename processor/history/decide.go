package history

import (
	"context"
	"slices"
	"strconv"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// Skills are the skills a trigger is decided against: the registry for
// the processor (a *providers.Registry satisfies it), the skills of a
// recording or of today's folders for replay.
type Skills interface {
	// Snapshot lists the skills available for q; its error is only for
	// context cancellation, provider failures make the snapshot incomplete.
	Snapshot(ctx context.Context, q catalog.Query) (catalog.Snapshot, error)
	// Resolve finds the winning candidate for name, wrapping
	// catalog.ErrNotFound when there is none.
	Resolve(ctx context.Context, name string, q catalog.Query) (catalog.Summary, error)
	// Load loads the winning skill's body, wrapping catalog.ErrNotFound when
	// it is gone.
	Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error)
}

// Preparer is optionally implemented by a Skills (a *providers.Registry
// does): it returns catalog.Prepare of q's snapshot under opts, kept
// while that snapshot stays current, so that a pre-step in a known working
// directory neither copies the snapshot nor builds its entries and digest
// again. Prepare prepares Snapshot's answer itself otherwise.
type Preparer interface {
	Prepared(ctx context.Context, q catalog.Query, opts catalog.Options) (catalog.View, error)
}

// Prepare returns the skills of q prepared for deciding, from the
// registry's kept view when it offers one.
func Prepare(ctx context.Context, s Skills, q catalog.Query, opts catalog.Options) (catalog.View, error) {
	if pr, ok := s.(Preparer); ok {
		return pr.Prepared(ctx, q, opts)
	}
	snap, err := s.Snapshot(ctx, q)
	if err != nil {
		return catalog.View{}, err
	}
	return catalog.Prepare(snap, opts), nil
}

// Visible reports whether a pre-step's tool view shows owner's skill tool
// (catalog.Visible on the wire's tools).
func Visible(tools []events.Tool, owner string) bool {
	ts := make([]catalog.Tool, len(tools))
	for i, t := range tools {
		ts[i] = catalog.Tool{Name: t.Name, Owner: t.Owner}
	}
	return catalog.Visible(ts, owner)
}

// Offer is opts for a pre-step whose tool view is tools: search offered
// when opts.SkillSearch is on and the view holds owner's skill and
// skill_search tools (catalog.Options.Offer).
func Offer(opts catalog.Options, tools []events.Tool, owner string) catalog.Options {
	if !opts.SkillSearch {
		return opts
	}
	ts := make([]catalog.Tool, len(tools))
	for i, t := range tools {
		ts[i] = catalog.Tool{Name: t.Name, Owner: t.Owner}
	}
	return opts.Offer(ts, owner)
}

// PreStepQuery is what a pre-step asks the skills for.
func PreStepQuery(ps events.PreStep) catalog.Query {
	return catalog.Query{Cwd: ps.Cwd, Project: ps.Project, ResourceDir: ps.ResourceDir}
}

// CallQuery is what a skill call asks the skills for.
func CallQuery(sc events.SkillCall) catalog.Query {
	return catalog.Query{Cwd: sc.Cwd, Project: sc.Project, ResourceDir: sc.ResourceDir}
}

// Releaser is implemented by skills that release new revisions to a
// share of sessions first (providers.Registry).
type Releaser interface {
	Releases(q catalog.Query) []catalog.Release
}

// InCohort returns q with its Canary set for session of tenant: the
// releases whose candidate the session takes (catalog.Cohort over the
// skills' releases for q). Skills that release nothing leave q as it is.
func InCohort(s Skills, tenant, session string, q catalog.Query) catalog.Query {
	q.Canary = ""
	if rl, ok := s.(Releaser); ok {
		if rels := rl.Releases(q); len(rels) > 0 {
			q.Canary = catalog.Cohort(tenant, session, rels)
		}
	}
	return q
}

// CatalogOrigins are the origins a catalog decided as d records, from
// the origins of the skills it was decided on: for a full catalog one per
// entry whose skill has one, in entry order; for a change list one per
// entry it adds or changes. nil when none has (no store skill, or a
// tombstone).
func CatalogOrigins(d catalog.Decision, o catalog.Origins) []events.EntryOrigin {
	if o.Len() == 0 {
		return nil
	}
	var out []events.EntryOrigin
	add := func(name string) {
		if r, ok := o.Of(name); ok {
			out = append(out, events.EntryOrigin{Name: name, Rev: r.Rev, Digest: r.Digest, Channel: r.Channel})
		}
	}
	if d.Update == catalog.UpdateChanges {
		for _, c := range d.Changes {
			if c.Kind != catalog.ChangeRemoved {
				add(c.Name)
			}
		}
		return out
	}
	for _, e := range d.Entries {
		add(e.Name)
	}
	return out
}

// Decide decides a pre-step: catalog.DecideView on the skills prepared
// for it (nil when our tool is not visible: a complete, empty view) and
// the session's catalog history; opts says how a hidden tool's tombstone
// ends (Options.UserInvocation).
func Decide(prepared *catalog.View, st State, opts catalog.Options) catalog.Decision {
	skills := catalog.View{UserInvocation: opts.UserInvocation} // only that, when the tool is not visible
	if prepared != nil {
		skills = *prepared
	}
	return catalog.DecideView(prepared != nil, skills, st.History)
}

// Answers reports whether the newest catalog already answers the trigger
// at seq for step: a redelivery, or a worker's retry of the step.
func (st State) Answers(seq uint64, step string) bool {
	return st.Newest != nil && (CausedBy(st.Newest.Record, seq) || st.Newest.Step == step)
}

// CausedBy reports whether an output answers the trigger at seq
// (its Causation-Seq header).
func CausedBy(r Record, seq uint64) bool {
	return r.Header.Get(events.HeaderCausationSeq) == strconv.FormatUint(seq, 10)
}

// Lookup binds skills to a trigger's query, as catalog.Execute needs them:
// through the skills' own binding when they offer one (Binder).
func Lookup(s Skills, q catalog.Query) catalog.Lookup {
	if b, ok := s.(Binder); ok {
		return b.Lookup(q)
	}
	return lookup{s, q}
}

// Binder is optionally implemented by a Skills (a *providers.Registry
// does): Lookup binds it to q for one call of the skill tool, whose Resolve
// and Load then answer as Skills' own would, sharing the work of checking
// that the skills are current.
type Binder interface {
	Lookup(q catalog.Query) catalog.Lookup
}

// lookup is Lookup's adapter.
type lookup struct {
	skills Skills
	q      catalog.Query
}

func (l lookup) Resolve(ctx context.Context, name string) (catalog.Summary, error) {
	return l.skills.Resolve(ctx, name, l.q)
}

func (l lookup) Load(ctx context.Context, name string) (catalog.Skill, error) {
	return l.skills.Load(ctx, name, l.q)
}

// CatalogRevoked is what a catalog decided as d records of the skills
// withheld as revoked from its view (catalog.View.Revoked): a full
// catalog, every one (none of them is listed); a change list, those it
// removes. Nil when none.
func CatalogRevoked(d catalog.Decision, revoked []string) []string {
	if len(revoked) == 0 {
		return nil
	}
	if d.Update != catalog.UpdateChanges {
		return slices.Clone(revoked)
	}
	var out []string
	for _, c := range d.Changes {
		if c.Kind == catalog.ChangeRemoved && slices.Contains(revoked, c.Name) {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return out
}
