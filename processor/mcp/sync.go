package mcp

import (
	"context"
	"errors"
	"reflect"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
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
//
// Only the skills that changed are read: the registry tells, with its
// snapshot, what each skill's provider knows of its version from memory
// (providers.Versioner), and a served skill whose version is the one its
// files were read under is kept as it is. A skill whose provider cannot
// tell is loaded, and read again when its digest changed.
func (s *Server) Sync(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	defer s.once.Do(func() { close(s.ready) })
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	snap, vers, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	old := s.st.Load()
	next := &state{byName: make(map[string]*entry, len(snap.Skills))}
	known := make(map[string]providers.Version, len(snap.Skills))
	var errs []error
	if !snap.Complete {
		errs = append(errs, errors.New("the registry's snapshot is incomplete"))
	}
	for i, sum := range snap.Skills {
		var v providers.Version
		if vers != nil {
			v = vers[i]
		}
		prev := old.find(sum.Name)
		var e *entry
		if prev != nil && unchanged(s.known[sum.Name], v, prev) {
			e = prev
		} else {
			if e, err = s.entryFor(ctx, prev, sum.Name, v); err != nil {
				errs = append(errs, err)
				v = providers.Version{} // kept as it was: look again next time
			}
		}
		if e != nil {
			next.skills = append(next.skills, e)
			next.byName[e.name] = e
			if v.Token != "" {
				known[e.name] = v
			}
		}
	}
	s.known = known
	next.res = resourcesKey(next.skills)
	// The tool's description follows complete snapshots only (an
	// incomplete one keeps what the model was last shown), except that
	// until a complete one was seen it shows what has resolved.
	if snap.Complete || !s.described {
		var rank catalog.Ranking
		if s.cfg.Ranker != nil && s.cfg.Options.Rank == catalog.RankUse {
			rank = s.cfg.Ranker.Ranking()
		}
		next.tool = catalog.DescribeToolRanked(snap, s.cfg.Options, s.cfg.ToolDescriptionMax, rank)
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

// versioned is a registry that tells, with its snapshot, what each
// skill's provider knows of its version (*providers.Registry).
type versioned interface {
	SnapshotVersions(ctx context.Context, q catalog.Query) (catalog.Snapshot, []providers.Version, error)
}

// snapshot returns the registry's snapshot and, when it can tell them,
// the skills' versions (nil otherwise).
func (s *Server) snapshot(ctx context.Context) (catalog.Snapshot, []providers.Version, error) {
	if vr, ok := s.reg.(versioned); ok {
		return vr.SnapshotVersions(ctx, s.cfg.Query)
	}
	snap, err := s.reg.Snapshot(ctx, s.cfg.Query)
	return snap, nil, err
}

// unchanged reports whether the served entry e, whose files were read
// under version was, is still current by version now: the provider could
// tell both, saw no change (the same token, nothing stale), and the
// digest it knows now, if any, is e's.
func unchanged(was, now providers.Version, e *entry) bool {
	return now.Token != "" && !now.Stale && now.Token == was.Token && (now.Digest == "" || now.Digest == e.digest)
}

// entryFor returns the entry of skill name, whose version is now v: old
// when the skill's files are unchanged, else one built from its current
// files; nil (and no error) when the skill is not to be served; old and
// the error when its files could not be read this time. A skill whose
// provider cannot tell its version is loaded first, and read only when
// its digest changed.
func (s *Server) entryFor(ctx context.Context, old *entry, name string, v providers.Version) (*entry, error) {
	if old != nil && v.Token == "" {
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
			if old != nil && e.digest == old.digest {
				return old, nil // read again, the same files
			}
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
