package replay

import (
	"slices"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// Delta is one step of a session as history shows it: what changed in the
// catalog the model saw, against what it saw at the previous step, and
// the searches and loads made in the step (up to the next pre-step).
//
// The base of the change is the list the model saw at the previous step,
// unless a compaction since hid that catalog (Hidden): the model then sees
// no list of ours but the one now visible, which is new to it, so every
// entry of it counts as added (and SinceHidden compares it with the hidden
// one). The first step's base is nothing.
type Delta struct {
	// Seq and Step are the pre-step's; both zero for the searches and
	// loads made before the first pre-step.
	Seq  uint64 `json:"seq"`
	Step string `json:"step"`
	// Catalog is the catalog the model saw after the step; nil when none
	// was visible.
	Catalog *CatalogRef `json:"catalog,omitempty"`
	// Revisions are the entries of the catalog the step appended that
	// were not served from their skill's stable revision (a release's
	// canary, a pin), with the revision and channel they came from.
	Revisions []events.EntryOrigin `json:"revisions,omitempty"`
	// Published: a catalog had been recorded by this step (so a nil
	// Catalog means a compaction masked every one).
	Published bool `json:"published,omitempty"`
	// Compaction is the sequence of the compaction in force at this step.
	Compaction uint64 `json:"compaction,omitempty"`
	// Hidden is the sequence of the catalog the model saw at the previous
	// step when a compaction since hid it.
	Hidden uint64 `json:"hidden,omitempty"`
	// SinceHidden counts the changes of the catalog now visible against
	// the hidden one, when there are both.
	SinceHidden *Counts `json:"sinceHidden,omitempty"`
	// Added are the entries new to the model, with their descriptions.
	Added []events.Entry `json:"added,omitempty"`
	// Removed are the names no longer listed.
	Removed []string `json:"removed,omitempty"`
	// Revoked are those of Removed that the step's catalog records as
	// left out because their revision is revoked.
	Revoked []string `json:"revoked,omitempty"`
	// Changed are the entries listed before and now whose description
	// changed (and is not now empty).
	Changed []Change `json:"changed,omitempty"`
	// Undescribed are the names now listed without a description that
	// had one before, or are new (see bare).
	Undescribed []string `json:"undescribed,omitempty"`
	// Reordered: the entries listed before and now are in another order.
	Reordered bool `json:"reordered,omitempty"`
	// LeftOut is how many skills the catalog now visible does not list
	// (the size limit, or search); LeftOutBefore the same of the base.
	LeftOut       int `json:"leftOut,omitempty"`
	LeftOutBefore int `json:"leftOutBefore,omitempty"`
	// Searches and Loads are what the model did in the step, in stream
	// order; Loads include the skills the user invoked with /name.
	Searches []Search `json:"searches,omitempty"`
	Loads    []Load   `json:"loads,omitempty"`
}

// CatalogRef names a catalog without its text.
type CatalogRef struct {
	Seq     uint64 `json:"seq"`
	Step    string `json:"step"`
	Update  string `json:"update"`
	Entries int    `json:"entries"`
}

// Change is an entry whose description changed.
type Change struct {
	Name   string `json:"name"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// Counts summarise a change of list.
type Counts struct {
	Added       int `json:"added"`
	Removed     int `json:"removed"`
	Changed     int `json:"changed"`
	Undescribed int `json:"undescribed"`
}

// Search is a skill search made in a step: its query, and what its
// recorded result showed (Shown of Total matches, from Offset), else its
// outcome and error code.
type Search struct {
	Seq     uint64   `json:"seq"`
	Call    string   `json:"call"`
	Query   string   `json:"query"`
	Outcome string   `json:"outcome"`
	Code    string   `json:"code,omitempty"`
	Offset  int      `json:"offset,omitempty"`
	Total   int      `json:"total"`
	Shown   []string `json:"shown,omitempty"`
	// Found: the result holds a search value (Total and Shown are its).
	Found bool `json:"found"`
}

// Load is a skill loaded in a step: by the model's skill call (By
// "model", with the call id, outcome ok or error and code), or invoked by
// the user with /name (By "user").
type Load struct {
	Seq     uint64 `json:"seq"`
	Name    string `json:"name"`
	By      string `json:"by"`
	Call    string `json:"call,omitempty"`
	Outcome string `json:"outcome"`
	Code    string `json:"code,omitempty"`
	// Rev and Channel are the store revision the call was served and why
	// (stable, canary, pin), when its result names them.
	Rev     uint64 `json:"rev,omitempty"`
	Channel string `json:"channel,omitempty"`
}

// Who loaded a skill.
const (
	ByModel = "model"
	ByUser  = "user"
)

// OutcomeInvoked is the outcome of a skill the user invoked.
const OutcomeInvoked = "invoked"

// Empty reports whether the step changed nothing in the model's list.
func (d *Delta) Empty() bool {
	return d.Hidden == 0 && len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0 &&
		len(d.Undescribed) == 0 && !d.Reordered && d.LeftOut == d.LeftOutBefore
}

// Deltas turns the Steps of a history-only replay (Options.HistoryOnly),
// fed in order, into Deltas: Add returns each one once the next pre-step
// (or Finish) closes it.
type Deltas struct {
	cur  *Delta
	prev *CatalogView // what the model saw at the previous pre-step
}

// Add takes the next Step and returns the Delta it closed, if any.
func (d *Deltas) Add(s Step) *Delta {
	switch s.Kind {
	case TriggerPreStep:
		done := d.cur
		d.cur = d.open(s)
		return done
	case TriggerSkillSearch:
		d.activity().Searches = append(d.activity().Searches, searchOf(s))
	case TriggerSkillCall:
		d.activity().Loads = append(d.activity().Loads, Load{Seq: s.Seq, Name: s.Skill, By: ByModel, Call: s.ID,
			Outcome: s.Recorded.Outcome, Code: s.Recorded.Code, Rev: s.Recorded.Rev, Channel: s.Recorded.Channel})
	}
	return nil
}

// Finish returns the last Delta, if any.
func (d *Deltas) Finish() *Delta {
	done := d.cur
	d.cur = nil
	return done
}

// activity is the Delta the searches and loads made now belong to: the
// open one, or one for what came before the first pre-step.
func (d *Deltas) activity() *Delta {
	if d.cur == nil {
		d.cur = &Delta{}
	}
	return d.cur
}

// open starts the Delta of pre-step s. A pre-step closes the activity
// before the first step too (returned by Add as a Delta of its own).
func (d *Deltas) open(s Step) *Delta {
	dl := &Delta{Seq: s.Seq, Step: s.ID, Published: s.Published, Compaction: s.MaskedBy}
	for _, o := range s.Recorded.Origins {
		if o.Channel != catalog.ChannelStable {
			dl.Revisions = append(dl.Revisions, o)
		}
	}
	base := d.prev
	// A catalog the model saw leaves its sight only by a compaction: masked
	// itself, or (a change list) its chain. (Without a compaction, no
	// catalog visible means the recording's catalog did not decode.)
	if base != nil && s.surface != nil && (s.Seen == nil || s.Seen.Seq != base.Seq && s.surface.Masks(base.Seq)) {
		dl.Hidden = base.Seq
		base = nil
	}
	if s.Seen != nil {
		dl.Catalog = &CatalogRef{Seq: s.Seen.Seq, Step: s.Seen.Step, Update: s.Seen.Update, Entries: len(s.Seen.Entries)}
		dl.LeftOut = s.Seen.Omitted
		var before []events.Entry
		if base != nil {
			before, dl.LeftOutBefore = base.Entries, base.Omitted
		}
		dl.diff(before, s.Seen.Entries)
		for _, name := range dl.Removed {
			if slices.Contains(s.Recorded.Revoked, name) {
				dl.Revoked = append(dl.Revoked, name)
			}
		}
		if dl.Hidden != 0 {
			hidden := Delta{}
			hidden.diff(d.prev.Entries, s.Seen.Entries)
			dl.SinceHidden = &Counts{Added: len(hidden.Added), Removed: len(hidden.Removed),
				Changed: len(hidden.Changed), Undescribed: len(hidden.Undescribed)}
		}
	}
	for _, inv := range s.Recorded.Invocations {
		l := Load{Seq: inv.Seq, Name: inv.Name, By: ByUser, Outcome: OutcomeInvoked}
		if inv.Name == "" {
			l.Outcome = OutcomeRejected // undecodable
		}
		dl.Loads = append(dl.Loads, l)
	}
	d.prev = s.Seen
	return dl
}

// bare reports whether the model saw e without a description. The catalog
// record does not tell a description the size limit dropped from a skill
// that has none: both are recorded empty, and both are shown here as
// "without a description". Once the record marks dropped descriptions,
// read the mark here.
func bare(e events.Entry) bool { return e.Description == "" }

// diff sets the entry changes from the list before to the list now.
// Names are matched exactly; a name listed twice counts once (its first
// entry).
func (dl *Delta) diff(before, now []events.Entry) {
	was := make(map[string]events.Entry, len(before))
	for _, e := range before {
		if _, ok := was[e.Name]; !ok {
			was[e.Name] = e
		}
	}
	is := make(map[string]bool, len(now))
	var kept []string // names listed before and now, in today's order
	for _, e := range now {
		if is[e.Name] {
			continue
		}
		is[e.Name] = true
		old, listed := was[e.Name]
		switch {
		case !listed:
			dl.Added = append(dl.Added, e)
			if bare(e) {
				dl.Undescribed = append(dl.Undescribed, e.Name)
			}
			continue
		case bare(e) && !bare(old):
			dl.Undescribed = append(dl.Undescribed, e.Name)
		case old.Description != e.Description:
			dl.Changed = append(dl.Changed, Change{Name: e.Name, Before: old.Description, After: e.Description})
		}
		kept = append(kept, e.Name)
	}
	var order []string // the same names in the order before
	seen := make(map[string]bool, len(before))
	for _, e := range before {
		if seen[e.Name] {
			continue
		}
		seen[e.Name] = true
		if is[e.Name] {
			order = append(order, e.Name)
		} else {
			dl.Removed = append(dl.Removed, e.Name)
		}
	}
	dl.Reordered = !slices.Equal(kept, order)
}

// searchOf is the history of a search step.
func searchOf(s Step) Search {
	out := Search{Seq: s.Seq, Call: s.ID, Query: s.Query, Outcome: s.Recorded.Outcome, Code: s.Recorded.Code}
	if v := s.Search; v != nil {
		out.Found, out.Offset, out.Total = true, v.Offset, v.Total
		for _, e := range v.Results {
			out.Shown = append(out.Shown, e.Name)
		}
	}
	return out
}

// callArgs are the working directory and skill name of a recorded skill
// call, empty when it does not decode.
func callArgs(l events.Layout, e Event) (cwd, name string) {
	enc, err := events.EncodingOf(e.Header(events.HeaderContentType))
	if err != nil {
		return "", ""
	}
	c, err := events.DecodeSkillCallIn(l, enc, e.Data)
	if err != nil {
		return "", ""
	}
	return c.Cwd, c.Args.Name
}
