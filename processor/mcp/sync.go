package mcp

import (
	"context"
	"errors"
	"reflect"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// Run keeps the served skills current until ctx ends: it syncs with the
// registry, then again whenever a provider announces a change (or every
// Resync when some provider cannot announce changes, or the last sync was
// incomplete). Each change reaches connected sessions as
// notifications/resources/list_changed (and tools/list_changed when the
// tool's catalog changed). It returns nil when ctx ends.
func (s *Server) Run(ctx context.Context) error {
	for {
		chans, complete := s.reg.Changes(s.cfg.Query)
		ok := s.Sync(ctx) == nil
		if ctx.Err() != nil {
			return nil
		}
		after, _ := s.reg.Changes(s.cfg.Query)
		if !sameChans(chans, after) {
			complete = false // a provider watches anew: look again soon
		}
		cases := make([]reflect.SelectCase, 0, len(after)+2)
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
		var timer *time.Timer
		if !complete || !ok {
			wait := s.cfg.Resync
			select {
			case <-s.whole:
			default:
				// Hosts' first listings wait for a complete snapshot:
				// look again soon.
				wait = min(wait, time.Second)
			}
			timer = time.NewTimer(wait)
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)})
		}
		for _, ch := range after {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
		}
		chosen, _, _ := reflect.Select(cases)
		if timer != nil {
			timer.Stop()
		}
		if chosen == 0 {
			return nil
		}
	}
}

func sameChans(a, b []<-chan struct{}) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Sync brings the served skills in line with the registry now. A skill
// whose files cannot be served (over the limits, unreadable, a
// frontmatter that is not a JSON object) is left out and logged once per
// reason. It returns an error when the registry's snapshot was incomplete
// or a skill could not be read (the others are served).
func (s *Server) Sync(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	defer s.once.Do(func() { close(s.ready) })
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	snap, err := s.reg.Snapshot(ctx, s.cfg.Query)
	if err != nil {
		return err
	}
	old := s.st.Load()
	next := &state{byName: make(map[string]*entry, len(snap.Skills))}
	var errs []error
	if !snap.Complete {
		errs = append(errs, errors.New("the registry's snapshot is incomplete"))
	}
	for _, sum := range snap.Skills {
		e, err := s.entryFor(ctx, old.find(sum.Name), sum.Name)
		if err != nil {
			errs = append(errs, err)
		}
		if e != nil {
			next.skills = append(next.skills, e)
			next.byName[e.name] = e
		}
	}
	next.res = resourcesKey(next.skills)
	// The tool's description follows complete snapshots only (an
	// incomplete one keeps what the model was last shown), except that
	// until a complete one was seen it shows what has resolved.
	if snap.Complete || !s.described {
		next.tool = catalog.DescribeTool(snap, s.cfg.Options, s.cfg.ToolDescriptionMax)
		s.described = s.described || snap.Complete
	} else {
		next.tool = old.tool
	}
	s.served.Lock()
	s.st.Store(next)
	s.announce(old, next)
	if snap.Complete {
		s.first.CompareAndSwap(nil, next)
	}
	s.served.Unlock()
	if snap.Complete {
		s.wholeOnce.Do(func() { close(s.whole) })
	}
	return errors.Join(errs...)
}

// entryFor returns the entry of skill name: old when the skill's digest
// is unchanged, else one built from its current files; nil (and no
// error) when the skill is not to be served; old and the error when its
// files could not be read this time.
func (s *Server) entryFor(ctx context.Context, old *entry, name string) (*entry, error) {
	if old != nil {
		sk, err := s.reg.Load(ctx, name, s.cfg.Query)
		if err == nil && sk.Digest != "" && sk.Digest == old.digest {
			return old, nil
		}
	}
	files, err := s.reg.Files(ctx, name, s.cfg.Query, MaxFiles, MaxBytes)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, nil // gone since the snapshot
	}
	if err == nil {
		var e *entry
		if e, err = newEntry(name, files); err == nil {
			return e, nil
		}
	} else if old != nil && !permanent(err) {
		// A read that failed for now (the store unreachable, a file
		// changing under the walk): keep serving what was served, and
		// look again soon.
		return old, err
	}
	key := name + "\x00" + err.Error()
	if len(s.logged) >= 10000 {
		clear(s.logged) // bounded: at worst a reason is logged again
	}
	if !s.logged[key] {
		s.logged[key] = true
		s.log.Warn("skill not served to MCP hosts", "skill", name, "reason", err.Error())
	}
	return nil, nil
}

// permanent reports whether a skill's files are refused for what they
// are (over the limits), not for a failure to read them.
func permanent(err error) bool {
	return errors.Is(err, errLimit) || errors.Is(err, agentskills.ErrTooManyFiles) || errors.Is(err, agentskills.ErrTooLarge) ||
		errors.Is(err, agentskills.ErrLinkOutside) || errors.Is(err, agentskills.ErrNotRegular)
}

// announce updates the SDK's resources and tool from old to next, which
// sends the list-changed notifications to the sessions that take them.
func (s *Server) announce(old, next *state) {
	var gone []string
	for _, e := range old.skills {
		if next.byName[e.name] == nil {
			gone = append(gone, fileURI(e.name, "SKILL.md"))
		}
	}
	if len(gone) > 0 {
		s.sdk.RemoveResources(gone...)
	}
	for _, e := range next.skills {
		if old.byName[e.name] == e {
			continue
		}
		r := s.fileResource(e, e.files["SKILL.md"])
		s.sdk.AddResource(r, s.readHandler)
	}
	if next.tool != old.tool {
		s.setTool(next.tool)
	}
}

// readHandler is registered with each SKILL.md resource; intercept
// answers resources/read before the SDK would call it.
func (s *Server) readHandler(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return nil, invalidParams("No resource is served at %s", quote(req.Params.URI))
}
