package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
)

// A skill's release state and its pins are keys of the index beside the
// skill's own: "release.<skill key>" holds a release in progress (a
// ReleaseState), "pin.global.<name>" and "pin.project.<id>.<name>" a
// revision every session of the tenant, or of one project, gets instead
// of the skill's current one (a PinState). Neither is a skill: readers
// that know only skill keys refuse their layout and list nothing of
// them.

// The channels of a release: a draft is offered to no session, a canary's
// candidate to the share of sessions whose cohort takes it
// (catalog.InCanary). Without a release the skill's newest revision is
// stable for every session.
const (
	ChannelDraft  = "draft"
	ChannelCanary = catalog.ChannelCanary
	ChannelStable = catalog.ChannelStable
)

// The prefixes of the index's release and pin keys.
const (
	releasePrefix = "release."
	pinPrefix     = "pin."
	// libPinPrefix is a tenant's pin of a library skill, kept in the
	// tenant's own index: "pin.library.<name>". The tenant's store
	// ignores it; the tenant's library provider serves it
	// (Config.TenantPins).
	libPinPrefix = pinPrefix + "library."
)

// LibraryPinKey is the key, in a tenant's own index, of the tenant's pin
// of library skill name: "pin.library.<name>".
func LibraryPinKey(name string) string { return libPinPrefix + name }

// maxControlBytes bounds a release or pin value: a few numbers, two
// digests and a publisher's name.
const maxControlBytes = 4 << 10

// maxByLength bounds ReleaseState.By, in bytes.
const maxByLength = 256

// ErrBadControl reports a release or pin value that is not one
// skillstream writes (malformed, out of bounds).
var ErrBadControl = errors.New("malformed release or pin entry")

// RevRef names one revision of a skill: its number in the skill's history
// (see At), its store revision (0 when not known: a candidate recorded
// before its revision was written) and its digest.
type RevRef struct {
	Rev      uint64 `json:"rev"`
	Revision uint64 `json:"revision"`
	Digest   string `json:"digest"`
}

func (r RevRef) check(what string) error {
	switch {
	case r.Rev == 0 || r.Rev > maxRev:
		return fmt.Errorf("%w: %s rev %d is not a revision number", ErrBadControl, what, r.Rev)
	case r.Revision > maxRev:
		return fmt.Errorf("%w: %s store revision %d out of range", ErrBadControl, what, r.Revision)
	case !skillstore.ValidDigest(r.Digest):
		return fmt.Errorf("%w: %s digest %q is not 64 lowercase hex digits", ErrBadControl, what, clip(r.Digest))
	}
	return nil
}

// ReleaseState is the value of a release key: a release in progress of
// one skill. Channel is ChannelDraft or ChannelCanary; Share the share of
// sessions a canary's candidate goes to, in basis points (0 to
// catalog.FullShare); Stable the revision every other session gets (nil:
// the skill is new in this release, and nobody outside the canary has
// it); Candidate the revision released, which is the skill's newest one
// once its write landed. By and At say who wrote it and when (unix
// milliseconds).
type ReleaseState struct {
	V         int     `json:"v"`
	Channel   string  `json:"channel"`
	Share     int     `json:"share"`
	Stable    *RevRef `json:"stable"`
	Candidate *RevRef `json:"candidate"`
	By        string  `json:"by,omitempty"`
	At        int64   `json:"at"`
}

// PinState is the value of a pin key: the revision the pinned scope's
// sessions get of a skill, whatever its release state or newest revision.
// Of says whose skill it is: "global" (the global scope's) or "project"
// (the pinned project's own).
type PinState struct {
	V        int    `json:"v"`
	Rev      uint64 `json:"rev"`
	Revision uint64 `json:"revision"`
	Digest   string `json:"digest"`
	Of       string `json:"of"`
}

// The values of PinState.Of.
const (
	PinOfGlobal  = "global"
	PinOfProject = "project"
)

// ReleaseKey is the index key of the release state of skill name in
// scope: "release.global.<name>" or "release.project.<id>.<name>".
func ReleaseKey(scope skillstore.Scope, name string) string {
	return releasePrefix + scope.Key(name)
}

// PinKey is the index key of the pin of skill name for the sessions of
// scope (global: every session of the tenant): "pin.global.<name>" or
// "pin.project.<id>.<name>".
func PinKey(scope skillstore.Scope, name string) string {
	return pinPrefix + scope.Key(name)
}

// controlKey reports whether key is a release or pin key (by its first
// token) and, when it is, its kind ("release" or "pin"), scope and skill
// name; err says why a key under either prefix is not one.
func controlKey(key string) (kind string, sc skillstore.Scope, name string, isControl bool, err error) {
	switch {
	case strings.HasPrefix(key, libPinPrefix):
		name = key[len(libPinPrefix):]
		if !catalog.ValidName(name) {
			err = fmt.Errorf("%w %q in key", catalog.ErrInvalidName, clip(name))
		}
		return "libpin", skillstore.Global, name, true, err
	case strings.HasPrefix(key, releasePrefix):
		kind = "release"
	case strings.HasPrefix(key, pinPrefix):
		kind = "pin"
	default:
		return "", skillstore.Scope{}, "", false, nil
	}
	sc, name, err = parseKey(key[len(kind)+1:])
	return kind, sc, name, true, err
}

// DecodeRelease decodes and checks a release value: at most 4 KiB of
// JSON of version 1, a known channel, a share within 0 to
// catalog.FullShare, a candidate, and well-formed revisions.
func DecodeRelease(data []byte) (ReleaseState, error) {
	if len(data) > maxControlBytes {
		return ReleaseState{}, fmt.Errorf("%w: release value of %d bytes, over %d", ErrBadControl, len(data), maxControlBytes)
	}
	var r ReleaseState
	if err := json.Unmarshal(data, &r); err != nil {
		return ReleaseState{}, fmt.Errorf("%w: release value: %v", ErrBadControl, err)
	}
	switch {
	case r.V != 1:
		return ReleaseState{}, fmt.Errorf("%w: release value of version %d, want 1", ErrBadControl, r.V)
	case r.Channel != ChannelDraft && r.Channel != ChannelCanary:
		return ReleaseState{}, fmt.Errorf("%w: release channel %q, want draft or canary", ErrBadControl, clip(r.Channel))
	case r.Share < 0 || r.Share > catalog.FullShare:
		return ReleaseState{}, fmt.Errorf("%w: release share %d basis points, outside 0 to %d", ErrBadControl, r.Share, catalog.FullShare)
	case r.Candidate == nil:
		return ReleaseState{}, fmt.Errorf("%w: release without a candidate", ErrBadControl)
	case len(r.By) > maxByLength:
		return ReleaseState{}, fmt.Errorf("%w: release by a name of %d bytes, over %d", ErrBadControl, len(r.By), maxByLength)
	}
	if err := r.Candidate.check("candidate"); err != nil {
		return ReleaseState{}, err
	}
	if r.Stable != nil {
		if err := r.Stable.check("stable"); err != nil {
			return ReleaseState{}, err
		}
		if r.Stable.Revision == 0 {
			return ReleaseState{}, fmt.Errorf("%w: stable without its store revision", ErrBadControl)
		}
	}
	return r, nil
}

// DecodePin decodes and checks a pin value of a pin key of scope: at
// most 4 KiB of JSON of version 1, a well-formed revision, and whose
// skill it is (a tenant-wide pin can only be of a global skill).
func DecodePin(scope skillstore.Scope, data []byte) (PinState, error) {
	if len(data) > maxControlBytes {
		return PinState{}, fmt.Errorf("%w: pin value of %d bytes, over %d", ErrBadControl, len(data), maxControlBytes)
	}
	var p PinState
	if err := json.Unmarshal(data, &p); err != nil {
		return PinState{}, fmt.Errorf("%w: pin value: %v", ErrBadControl, err)
	}
	switch {
	case p.V != 1:
		return PinState{}, fmt.Errorf("%w: pin value of version %d, want 1", ErrBadControl, p.V)
	case p.Of != PinOfGlobal && p.Of != PinOfProject:
		return PinState{}, fmt.Errorf("%w: pin of %q, want global or project", ErrBadControl, clip(p.Of))
	case p.Of == PinOfProject && scope == skillstore.Global:
		return PinState{}, fmt.Errorf("%w: a pin for every session cannot be of a project's skill", ErrBadControl)
	case p.Revision == 0:
		return PinState{}, fmt.Errorf("%w: pin without its store revision", ErrBadControl)
	}
	if err := (RevRef{Rev: p.Rev, Revision: p.Revision, Digest: p.Digest}).check("pinned"); err != nil {
		return PinState{}, err
	}
	return p, nil
}

// skillScope is the scope of the skill a pin of scope holds.
func (p PinState) skillScope(scope skillstore.Scope) skillstore.Scope {
	if p.Of == PinOfProject {
		return scope
	}
	return skillstore.Global
}

func encodeJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// ParseShare reads a share of sessions given as a percentage, with or
// without a "%": "10%", "10", "2.5%", to at most two decimals. It refuses
// anything else, and a share outside 0 to 100% (ErrBadShare). The share
// is returned in basis points.
func ParseShare(s string) (int, error) {
	text := strings.TrimSuffix(strings.TrimSpace(s), "%")
	whole, frac, dotted := strings.Cut(text, ".")
	digits := func(d string) bool {
		for i := 0; i < len(d); i++ {
			if d[i] < '0' || d[i] > '9' {
				return false
			}
		}
		return true
	}
	neg := strings.HasPrefix(whole, "-")
	if neg {
		whole = whole[1:]
	}
	switch {
	case whole == "" || !digits(whole) || !digits(frac) || (dotted && frac == ""):
		return 0, fmt.Errorf("%w: %q is not a percentage (want e.g. 10%%, 2.5%%)", ErrBadShare, clip(s))
	case len(frac) > 2:
		return 0, fmt.Errorf("%w: %q has more than two decimals", ErrBadShare, clip(s))
	case neg:
		return 0, fmt.Errorf("%w: %q is below 0%%", ErrBadShare, clip(s))
	case len(whole) > 3:
		return 0, fmt.Errorf("%w: %q is over 100%%", ErrBadShare, clip(s))
	}
	n := 0
	for _, c := range whole + (frac + "00")[:2] {
		n = n*10 + int(c-'0')
	}
	if n > catalog.FullShare {
		return 0, fmt.Errorf("%w: %q is over 100%%", ErrBadShare, clip(s))
	}
	return n, nil
}
