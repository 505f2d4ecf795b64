package replay

import (
	"context"
	"errors"
	"fmt"

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
//     (nothing was ever listed: the view was empty).
//   - A skill a call names: the tool result the call got (a loaded body
//     with its provider and resource base, or unknown, not invocable, a
//     provider error), else the newest result an earlier call of that name
//     got, else the skills captured in the recording for the call's
//     working directory, else unknown.
type shown struct {
	entries  []events.Entry
	results  map[string]events.ToolResult // by skill name
	captured recordedSkills
}

func (s shown) Snapshot(context.Context, catalog.Query) (catalog.Snapshot, error) {
	snap := catalog.Snapshot{Complete: true, Skills: make([]catalog.Summary, len(s.entries))}
	for i, e := range s.entries {
		snap.Skills[i] = catalog.Summary{Name: e.Name, Description: e.Description,
			Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true}}
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
		return skillOf(name, res)
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

// skillOf is the skill a telling tool result shows.
func skillOf(name string, res events.ToolResult) (catalog.Skill, error) {
	if !res.IsError {
		v := res.Value
		sk := catalog.Skill{Content: v.Content, Summary: catalog.Summary{Name: name, Provider: v.Provider,
			Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true}}}
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

// decodeResult decodes a recorded tool result.
func decodeResult(e *Event) (events.ToolResult, bool) { return decode(e, events.DecodeToolResult) }

// decodeCatalog decodes a recorded catalog.
func decodeCatalog(e *Event) (events.Catalog, bool) { return decode(e, events.DecodeCatalog) }

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
