package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// shown is what the recording shows of the skills at one trigger
// (Options.AsRecorded): the skills a session saw at that point, so that
// an unchanged processor decides every trigger as it did.
//
//   - The catalog list: the entries of the catalog the trigger appended,
//     else those of the newest catalog of ours recorded before it (the
//     processor found the view unchanged or could not see it), else none
//     (nothing was ever listed: the view was empty). A shortened catalog
//     names how many skills it left out, not which: as many placeholders
//     stand in for them (see placeholders). An entry it listed without
//     its description ("- `name`", where a skill without one reads
//     "- `name`: ") gets the longest description there can be. The
//     stand-ins rank below the entries listed whole, the placeholders
//     lowest, so the size limit (or search's shortening) gives way in
//     the same places: the catalog lists, strips and leaves out exactly
//     what it did (nothing of the real skills' lengths or sources is
//     needed: a stand-in at least as long as what it stands for does not
//     fit where that did not, and once it is gone the rest is exact).
//   - A skill a call names: the tool result the call got (a loaded body
//     with its provider and resource base, or unknown, not invocable, a
//     provider error), else the newest result an earlier call of that name
//     got, else the skills captured in the recording for the call's
//     working directory, else unknown.
type shown struct {
	entries  []catalog.Entry              // as the model read them: Bare when listed without a description
	origins  []events.EntryOrigin         // the revisions the catalog recorded for its entries
	revoked  []string                     // the skills the catalog recorded as withheld, revoked
	omitted  []catalog.Summary            // placeholders of the skills left out
	results  map[string]events.ToolResult // by skill name
	captured recordedSkills
	maxBytes int // the instruction size limit
	descMax  int // the description cap
}

// The ranks (sources, by their precedence) of the skills shown: an entry
// listed whole, one listed without its description (given up first), a
// placeholder (left out first).
const (
	sourceListed = catalog.SourceProject
	sourceBare   = catalog.SourceBundled
	sourceLeft   = ""
)

func (s shown) Snapshot(context.Context, catalog.Query) (catalog.Snapshot, error) {
	snap := catalog.Snapshot{Complete: true, Skills: make([]catalog.Summary, len(s.entries), len(s.entries)+len(s.omitted)), Revoked: s.revoked}
	for i, e := range s.entries {
		snap.Skills[i] = catalog.Summary{Name: e.Name, Description: e.Description, Source: sourceListed,
			Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true}}
		if e.Bare {
			snap.Skills[i].Description, snap.Skills[i].Source = longestDescription(s.descMax), sourceBare
		}
	}
	snap.Skills = append(snap.Skills, s.omitted...) // their names sort last
	// The revisions recorded (store skills' entries).
	if len(s.origins) > 0 {
		at := make(map[string]int, len(s.entries))
		for i, e := range s.entries {
			at[e.Name] = i
		}
		for _, o := range s.origins {
			if i, ok := at[o.Name]; ok {
				snap.Skills[i].Origin = catalog.Origin{Rev: o.Rev, Digest: o.Digest, Channel: o.Channel}
			}
		}
	}
	return snap, nil
}

func (s shown) Resolve(ctx context.Context, name string, q catalog.Query) (catalog.Summary, error) {
	sk, err := s.Load(ctx, name, q)
	return sk.Summary, err
}

// Load answers from the recorded result; the body a result shows is the
// one the session got, whether Execute asks for the summary or the skill.
func (s shown) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	if res, ok := s.results[name]; ok {
		return skillOf(name, res, s.maxBytes)
	}
	if s.captured[q.Cwd] != nil {
		return s.captured.Load(ctx, name, q)
	}
	return catalog.Skill{}, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
}

// telling reports whether a recorded tool result says something about its
// skill (a body, or why there is none), as opposed to the call itself
// (a bad request, an expiry).
func telling(res events.ToolResult) bool {
	if !res.IsError {
		return res.Value != nil
	}
	if res.Error == nil {
		return false
	}
	switch res.Error.Code {
	case events.CodeUnknown, events.CodeNotModelInvocable, events.CodeProvider:
		return true
	}
	return false
}

// skillOf is the skill a telling tool result shows, under the instruction
// size limit maxBytes.
func skillOf(name string, res events.ToolResult, maxBytes int) (catalog.Skill, error) {
	if !res.IsError {
		v := res.Value
		content := v.Content
		if v.Truncated != nil {
			content = untruncated(content, *v.Truncated, maxBytes)
		}
		sk := catalog.Skill{Content: content, Summary: catalog.Summary{Name: name, Provider: v.Provider,
			Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true},
			Origin:     catalog.Origin{Rev: v.Rev, Channel: v.Channel}}}
		if rb := v.ResourceBase; rb != nil {
			sk.ResourceBase = &catalog.ResourceBase{Kind: catalog.ResourceKind(rb.Kind), Path: rb.Path, URL: rb.URL, Description: rb.Description}
		}
		return sk, nil
	}
	switch res.Error.Code {
	case events.CodeNotModelInvocable:
		return catalog.Skill{Summary: catalog.Summary{Name: name}}, nil
	case events.CodeProvider:
		return catalog.Skill{}, errors.New(res.Error.Message)
	}
	return catalog.Skill{}, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
}

// untruncated stands in for the body a truncated result was cut from: the
// kept prefix, then filler up to the recorded total, so that the size
// limit cuts it again where it cut the original. Where a code point
// straddled the limit, one of the same length is put back first.
func untruncated(shown string, t events.Truncated, maxBytes int) string {
	kept, total := int(t.Kept), int(t.Total)
	if kept < 0 || kept > len(shown) || total < kept {
		return shown
	}
	var b strings.Builder
	b.Grow(total)
	b.WriteString(shown[:kept])
	rest := total - kept
	if gap := maxBytes - kept; gap > 0 && gap < utf8.UTFMax && rest > gap {
		straddler := [...]string{2: "é", 3: "€", 4: "😀"}[gap+1]
		b.WriteString(straddler)
		rest -= len(straddler)
	}
	b.WriteString(strings.Repeat("x", rest))
	return b.String()
}

// decodeResult decodes a recorded tool result.
func decodeResult(l events.Layout, e *Event) (events.ToolResult, bool) {
	return decode(e, func(enc events.Encoding, b []byte) (events.ToolResult, error) {
		return events.DecodeToolResultIn(l, enc, b)
	})
}

// decodeCatalog decodes a recorded catalog.
func decodeCatalog(l events.Layout, e *Event) (events.Catalog, bool) {
	return decode(e, func(enc events.Encoding, b []byte) (events.Catalog, error) { return events.DecodeCatalogIn(l, enc, b) })
}

// decode decodes a recorded event (nil: nothing) in its declared encoding.
func decode[T any](e *Event, dec func(events.Encoding, []byte) (T, error)) (T, bool) {
	var zero T
	if e == nil {
		return zero, false
	}
	enc, err := events.EncodingOf(e.Header(events.HeaderContentType))
	if err != nil {
		return zero, false
	}
	v, err := dec(enc, e.Data)
	return v, err == nil
}
