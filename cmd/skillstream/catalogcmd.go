package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/processor/history"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/store"
)

func (a *app) catalogCommand() (*command, runFunc) {
	var p preview
	cmd := newCommand("catalog", "skillstream catalog [--cwd DIR] [--json] [flags]", `
Print exactly the initial catalog text a model would receive now for a session
whose working directory is DIR (the current directory by default), followed by
a newline. An empty view prints nothing and exits 0: no catalog would be sent.
Characters a terminal would act on instead of showing (control characters
such as ESC, bidirectional-text controls) are printed escaped, as \x1b or
\u202e; --json gives the text as it is.

On stderr, a summary for the operator: how many skills the catalog lists, its
approximate size in tokens, the skills left out (model invocation disabled),
the skills shadowed by a higher-ranked one of the same name and why, provider
errors, the diagnostics of skill files that were dropped, and the skills
folders too large to watch file by file (see --max-watches-per-skills-dir),
the skills a pin holds at a revision, and each release in progress (its
candidate and share of sessions). None of that reaches the model.

A store skill's revision depends on the session when a release is in
progress: without --session the preview is what a session outside every
canary gets; --session SID previews that session's (its cohort, as serve
places it; with --tenants, of the --tenant named) and says which candidates
it takes. --json gives each skill's origin (rev, digest, channel: stable,
canary or pin) and the releases.

It takes the same skills flags and SKILLSTREAM_* variables as serve, so the
preview matches what serve sends byte for byte. With --skill-search the preview
is the catalog of a session offered skill search (its tool view holds the
skill_search tool beside the skill tool): at most --catalog-listed-max skills,
whole, and a last line saying how many more skill_search finds. Exit status 1
when a provider failed (serve would send nothing until it recovers).`[1:], `
  skillstream catalog
  skillstream catalog --cwd ~/src/app --skills-dir /srv/team-skills
  skillstream catalog --no-bundled --catalog-description-max-length 120
  skillstream catalog --skill-search --catalog-listed-max 40
  skillstream catalog --json | jq .entries
  skillstream catalog --session 7f3c --json | jq '.skills[].origin'`[1:])
	p.flags(cmd, "print the structured view as JSON instead of the model text")
	var session string
	cmd.localString(&session, "session", "", "preview the view of session `sid` (its cohort of the releases in progress)")
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("catalog takes no arguments, got %q (use --cwd DIR)", args[0])
		}
		if session != "" {
			if err := events.CheckSession(session); err != nil {
				return usagef("--session: %v", err)
			}
		}
		reg, dir, err := p.open(ctx, a, cmd.name)
		if err != nil {
			return err
		}
		defer reg.Close()
		q := p.query(dir)
		rels := reg.Releases(q)
		if session != "" {
			q = history.InCohort(reg.Registry, p.c.Tenant, session, q)
		}
		rep := reg.Inspect(ctx, q)
		if rep.Err != nil {
			return fmt.Errorf("inspect skills for %s: %w", dir, rep.Err)
		}
		v := newCatalogView(rep, p.c.catalogOptions())
		v.Session = session
		v.Releases = releasesOf(ctx, reg.Registry, q, rels, session)
		if p.asJSON {
			if err := printJSON(a.stdout, v); err != nil {
				return err
			}
		} else if v.Complete && v.Text != "" {
			fmt.Fprintln(a.stdout, catalog.Reveal(v.Text)) // descriptions are their authors' text
		}
		var sum strings.Builder
		v.summary(&sum)
		io.WriteString(a.stderr, catalog.Reveal(sum.String()))
		polled, err := p.fs.Polled(ctx, p.query(dir))
		if err != nil {
			return fmt.Errorf("inspect skills for %s: %w", dir, err)
		}
		for _, f := range polled {
			fmt.Fprintf(a.stderr, "not watched file by file: %s needs %d watches for its skill folders, more than --max-watches-per-skills-dir %d; serve sees skills added or removed there at once, edits inside them within %s\n",
				catalog.RevealLine(f.Path), f.Needed, f.Limit, f.Every)
		}
		if !v.Complete {
			return errReported
		}
		return nil
	}
}

// catalogView is the structured view of `catalog --json`.
type catalogView struct {
	Cwd      string `json:"cwd"`
	Complete bool   `json:"complete"`
	// Text is the initial catalog the model would receive; empty when the
	// view is empty or incomplete.
	Text         string      `json:"text"`
	Digest       string      `json:"digest"`
	ApproxTokens int         `json:"approxTokens"`
	Entries      []entryJSON `json:"entries"`
	// Shortened says what the catalog size limit (or, with search
	// offered, the listed maximum) took; absent when the catalog fits.
	Shortened *shortenedJSON `json:"shortened,omitempty"`
	// Skills are all winning skills, model-invocable or not.
	Skills      []catalog.Summary      `json:"skills"`
	Shadowed    []shadowJSON           `json:"shadowed"`
	Rejected    []problemJSON          `json:"rejected"`
	Errors      []problemJSON          `json:"errors"`
	Diagnostics []providers.Diagnostic `json:"diagnostics"`
	// Session is the session previewed (--session); absent for the view
	// of a session outside every canary.
	Session string `json:"session,omitempty"`
	// Releases are the releases in progress of the skills of the view's
	// scopes (none pinned there).
	Releases []releaseJSON `json:"releases"`
}

// releaseJSON is a release in progress: the skill, its candidate (rev
// and digest) and the share of sessions offered it in basis points, and,
// with --session, whether that session takes it.
type releaseJSON struct {
	Name      string `json:"name"`
	Rev       uint64 `json:"rev,omitempty"`
	Candidate string `json:"candidate"`
	Share     int    `json:"share"`
	Taken     *bool  `json:"taken,omitempty"`
}

// releasesOf describes rels, the releases of q's scopes: each candidate's
// revision number is read from a view of the sessions taking every
// candidate.
func releasesOf(ctx context.Context, reg *providers.Registry, q catalog.Query, rels []catalog.Release, session string) []releaseJSON {
	out := []releaseJSON{}
	if len(rels) == 0 {
		return out
	}
	var all []string
	for _, r := range rels {
		all = append(all, r.Name)
	}
	sort.Strings(all)
	cq := q
	cq.Canary = strings.Join(slices.Compact(all), ",")
	revs := map[string]uint64{}
	if snap, err := reg.Snapshot(ctx, cq); err == nil {
		for _, s := range snap.Skills {
			revs[s.Name+" "+s.Origin.Digest] = s.Origin.Rev
		}
	}
	for _, r := range rels {
		j := releaseJSON{Name: r.Name, Rev: revs[r.Name+" "+r.Candidate], Candidate: r.Candidate, Share: r.Share}
		if session != "" {
			taken := catalog.TakesCandidate(q.Canary, r.Name)
			j.Taken = &taken
		}
		out = append(out, j)
	}
	return out
}

// shortenedJSON is what the catalog size limit took from the catalog.
type shortenedJSON struct {
	MaxLength int `json:"maxLength"`
	// Search is set when the catalog is one offered skill search: whole
	// skills are left out (up to ListedMax listed, 0 for no count limit)
	// and the skill_search tool finds them.
	Search    bool `json:"search,omitempty"`
	ListedMax int  `json:"listedMax,omitempty"`
	// WithoutDescription are the skills listed without their description,
	// Omitted those not listed at all.
	WithoutDescription []string `json:"withoutDescription"`
	Omitted            []string `json:"omitted"`
	// ApproxTokensBefore is the approximate size of the catalog the limit
	// would have allowed to be sent whole.
	ApproxTokensBefore int `json:"approxTokensBefore"`
}

type entryJSON struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type originJSON struct {
	Provider     string                `json:"provider"`
	Source       string                `json:"source"`
	Rank         int                   `json:"rank"`
	ResourceBase *catalog.ResourceBase `json:"resourceBase,omitempty"`
}

type shadowJSON struct {
	Name   string     `json:"name"`
	Loser  originJSON `json:"shadowed"`
	Winner originJSON `json:"by"`
	Reason string     `json:"reason"`
}

type problemJSON struct {
	Provider string `json:"provider,omitempty"`
	Name     string `json:"name,omitempty"`
	Error    string `json:"error"`
}

func origin(c providers.Candidate) originJSON {
	return originJSON{Provider: c.Provider, Source: c.Source, Rank: c.Rank, ResourceBase: c.ResourceBase}
}

// newCatalogView computes what the model would see from an Inspect report:
// with search on, the catalog of a session offered it.
func newCatalogView(rep providers.Report, opts catalog.Options) catalogView {
	opts.SearchOffered = opts.SkillSearch
	v := catalogView{
		Cwd:         rep.Query.Cwd,
		Complete:    rep.Snapshot.Complete,
		Skills:      rep.Snapshot.Skills,
		Entries:     []entryJSON{},
		Shadowed:    []shadowJSON{},
		Rejected:    []problemJSON{},
		Errors:      []problemJSON{},
		Diagnostics: rep.Diagnostics,
		Releases:    []releaseJSON{},
	}
	if v.Skills == nil {
		v.Skills = []catalog.Summary{}
	}
	if v.Diagnostics == nil {
		v.Diagnostics = []providers.Diagnostic{}
	}
	full := catalog.Entries(rep.Snapshot.Skills, opts.DescriptionMaxLength)
	view := catalog.Prepare(catalog.Snapshot{Skills: rep.Snapshot.Skills, Complete: true}, opts)
	for _, e := range view.Entries {
		v.Entries = append(v.Entries, entryJSON{Name: e.Name, Description: e.Description})
	}
	v.Digest = view.Digest
	if v.Complete && (len(view.Entries) > 0 || view.Omitted > 0) {
		v.Text = view.Text(catalog.UpdateInitial)
		v.ApproxTokens = approxTokens(v.Text)
	}
	if len(view.Entries) != len(full) || view.Omitted > 0 || slices.ContainsFunc(view.Entries, func(e catalog.Entry) bool { return e.Bare }) {
		sh := &shortenedJSON{MaxLength: opts.MaxLength, WithoutDescription: []string{}, Omitted: []string{}}
		if view.Search {
			sh.Search, sh.ListedMax = true, opts.ListedMax
		}
		shown := make(map[string]catalog.Entry, len(view.Entries))
		for _, e := range view.Entries {
			shown[e.Name] = e
		}
		for _, e := range full {
			switch se, ok := shown[e.Name]; {
			case !ok:
				sh.Omitted = append(sh.Omitted, e.Name)
			case se.Bare:
				sh.WithoutDescription = append(sh.WithoutDescription, e.Name)
			}
		}
		sh.ApproxTokensBefore = approxTokens(catalog.Render(catalog.UpdateInitial, full))
		v.Shortened = sh
	}
	for _, s := range rep.Shadowed {
		v.Shadowed = append(v.Shadowed, shadowJSON{
			Name: s.Candidate.Name, Loser: origin(s.Candidate), Winner: origin(s.By), Reason: shadowReason(s),
		})
	}
	for _, r := range rep.Rejected {
		v.Rejected = append(v.Rejected, problemJSON{Provider: r.Candidate.Provider, Name: r.Candidate.Name, Error: r.Err.Error()})
	}
	for _, e := range rep.Errors {
		v.Errors = append(v.Errors, problemJSON{Provider: e.Provider, Error: e.Err.Error()})
	}
	return v
}

// approxTokens estimates the tokens of a text as its characters divided by
// four, rounded up. It is a rule of thumb, not a tokenizer.
func approxTokens(s string) int {
	return (utf8.RuneCountInString(s) + 3) / 4
}

// shadowReason explains why the winner of a name beat another candidate.
func shadowReason(s providers.Shadowed) string {
	if s.By.Rank < s.Candidate.Rank {
		return fmt.Sprintf("lower rank wins (%d < %d)", s.By.Rank, s.Candidate.Rank)
	}
	if s.By.Provider != s.Candidate.Provider {
		return fmt.Sprintf("same rank %d; provider %q comes first", s.By.Rank, s.By.Provider)
	}
	return fmt.Sprintf("same rank %d; provider %q listed it first", s.By.Rank, s.By.Provider)
}

// describe names where a candidate comes from, for people.
func describe(o originJSON) string {
	s := o.Source
	if s == "" {
		s = o.Provider
	}
	if rb := o.ResourceBase; rb != nil && rb.Where() != "" {
		s += " " + rb.Where()
	}
	return s
}

// summary writes the operator's summary of the view.
func (v catalogView) summary(w io.Writer) {
	var hidden []string
	for _, s := range v.Skills {
		if !s.Invocation.ModelInvocable {
			hidden = append(hidden, s.Name)
		}
	}
	switch {
	case !v.Complete:
		fmt.Fprintf(w, "catalog incomplete: a provider failed, so serve would send nothing now (%d skills collected)\n", len(v.Entries))
	case len(v.Entries) == 0 && v.Shortened == nil:
		fmt.Fprintf(w, "no model-invocable skills for %s: no catalog would be sent\n", v.Cwd)
	default:
		fmt.Fprintf(w, "%d %s in the catalog for %s, about %d tokens (approximate: characters/4), digest %s\n",
			len(v.Entries), plural(len(v.Entries), "skill", "skills"), v.Cwd, v.ApproxTokens, v.Digest)
	}
	if sh := v.Shortened; sh != nil && v.Complete && sh.Search {
		fmt.Fprintf(w, "shortened for skill search (--catalog-listed-max %d, --catalog-max-length %d): about %d tokens before, %d after; %d not listed\n",
			sh.ListedMax, sh.MaxLength, sh.ApproxTokensBefore, v.ApproxTokens, len(sh.Omitted))
		if len(sh.Omitted) > 0 {
			fmt.Fprintf(w, "not listed (skill_search finds them; still loadable by name): %s\n", strings.Join(sh.Omitted, ", "))
		}
	} else if sh != nil && v.Complete {
		fmt.Fprintf(w, "shortened to fit --catalog-max-length %d: about %d tokens before, %d after; %d %s without a description, %d not listed\n",
			sh.MaxLength, sh.ApproxTokensBefore, v.ApproxTokens, len(sh.WithoutDescription), plural(len(sh.WithoutDescription), "skill", "skills"), len(sh.Omitted))
		if len(sh.WithoutDescription) > 0 {
			fmt.Fprintf(w, "listed without a description (size limit): %s\n", strings.Join(sh.WithoutDescription, ", "))
		}
		if len(sh.Omitted) > 0 {
			fmt.Fprintf(w, "not listed (size limit; still loadable by name): %s\n", strings.Join(sh.Omitted, ", "))
		}
	}
	if len(hidden) > 0 {
		fmt.Fprintf(w, "not listed (model invocation disabled): %s\n", strings.Join(hidden, ", "))
	}
	for _, s := range v.Skills {
		if s.Origin.Channel == catalog.ChannelPin {
			fmt.Fprintf(w, "pinned: %s at rev %d %s\n", s.Name, s.Origin.Rev, skillstore.Short(s.Origin.Digest))
		}
	}
	for _, r := range v.Releases {
		rev := ""
		if r.Rev != 0 {
			rev = fmt.Sprintf("rev %d ", r.Rev)
		}
		line := fmt.Sprintf("release in progress: %s %s%s to %s of sessions", r.Name, rev, skillstore.Short(r.Candidate), store.FormatShare(r.Share))
		switch {
		case r.Taken == nil:
			line += "; this preview is a session's outside the canary (--session SID previews a session's)"
		case *r.Taken:
			line += "; session " + v.Session + " takes the candidate"
		default:
			line += "; session " + v.Session + " keeps the stable revision"
		}
		fmt.Fprintln(w, line)
	}
	for _, s := range v.Shadowed {
		fmt.Fprintf(w, "shadowed: %s from %s by %s: %s\n", s.Name, describe(s.Loser), describe(s.Winner), s.Reason)
	}
	for _, r := range v.Rejected {
		fmt.Fprintf(w, "rejected: %s\n", r.Error)
	}
	for _, e := range v.Errors {
		if e.Provider != "" {
			fmt.Fprintf(w, "error: provider %q: %s\n", e.Provider, e.Error)
		} else {
			fmt.Fprintf(w, "error: %s\n", e.Error)
		}
	}
	for _, d := range v.Diagnostics {
		fmt.Fprintf(w, "dropped: %s\n", d.String())
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
