package catalog

import (
	"sort"
	"strings"
)

// FullShare is a share of sessions given in basis points: 10,000 is every
// session, 1,000 is 10%.
const FullShare = 10000

// Release is a skill whose new revision is offered to a share of
// sessions only (a canary): Candidate identifies that revision (its
// digest), Share is the share of sessions that take it, in basis points
// (0 to FullShare).
type Release struct {
	Name      string `json:"name"`
	Candidate string `json:"candidate"`
	Share     int    `json:"share"`
	// offset is the release's turn of the groups (see InCanary), kept by
	// NewRelease so that a trigger does not hash it again; 0 with known
	// false: computed when asked.
	offset uint64
	known  bool
}

// NewRelease is the Release of skill name's candidate offered to share
// basis points of the sessions, with its offset computed once: a provider
// that keeps its releases makes them with it.
func NewRelease(name, candidate string, share int) Release {
	return Release{Name: name, Candidate: candidate, Share: share, offset: releaseOffset(name, candidate), known: true}
}

// releaseOffset is a release's turn of the groups, in [0, FullShare).
func releaseOffset(name, candidate string) uint64 {
	return hashOf("release", name, candidate) % FullShare
}

// CohortBuckets is the number of groups a tenant's sessions fall into
// for releases: sessions of one group take the same candidates, so a
// tenant's sessions need at most this many distinct views of their skills,
// however many releases are in progress.
const CohortBuckets = 100

// InCanary reports whether a session takes a release's candidate. It is a
// pure function of the tenant, the session id, the skill's name and the
// candidate: every member, a restart and a replay decide alike, and a
// session keeps its answer while the release is unchanged.
//
// A session's group is a hash of tenant and session in [0, CohortBuckets);
// a release turns the groups by an offset, a hash of the skill's name and
// candidate in [0, FullShare); the session's place for the release is
// group*FullShare/CohortBuckets plus that offset, modulo FullShare, and it
// takes the candidate when its place is below the share. So each group is
// a sample of the sessions, different releases take different groups
// (their offsets differ), raising a share keeps every session that
// already took the candidate, and a new candidate draws its groups
// afresh.
func InCanary(tenant, session string, r Release) bool {
	return inCanary(sessionGroup(tenant, session), r)
}

// sessionGroup is a session's group, in [0, CohortBuckets).
func sessionGroup(tenant, session string) uint64 {
	return hashOf("session", tenant, session) % CohortBuckets
}

// inCanary is InCanary for a session of group.
func inCanary(group uint64, r Release) bool {
	if r.Share <= 0 {
		return false
	}
	if r.Share >= FullShare {
		return true
	}
	offset := r.offset
	if !r.known {
		offset = releaseOffset(r.Name, r.Candidate)
	}
	return (group*(FullShare/CohortBuckets)+offset)%FullShare < uint64(r.Share)
}

// hashOf is a 64-bit hash of its inputs: FNV-1a over each input and its
// length (so that no two lists of inputs share a hash input), finished by
// a 64-bit mixer so that every bit of the result depends on every input
// bit. Cheap (a few nanoseconds a byte): a trigger computes one per
// release in progress.
func hashOf(parts ...string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for _, s := range parts {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= prime
		}
		for n := uint64(len(s)) | 1<<63; n != 0; n >>= 8 {
			h ^= n & 0xff
			h *= prime
		}
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// Cohort returns the Query.Canary of a session: the names of the releases
// whose candidate it takes (InCanary), sorted and joined with commas; ""
// when it takes none.
func Cohort(tenant, session string, releases []Release) string {
	if len(releases) == 0 {
		return ""
	}
	group := sessionGroup(tenant, session)
	var names []string
	for _, r := range releases {
		if inCanary(group, r) {
			names = append(names, r.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// CanaryNames splits a Query.Canary into its names.
func CanaryNames(canary string) []string {
	if canary == "" {
		return nil
	}
	return strings.Split(canary, ",")
}

// TakesCandidate reports whether a Query.Canary names skill name.
func TakesCandidate(canary, name string) bool {
	for canary != "" {
		var head string
		head, canary, _ = strings.Cut(canary, ",")
		if head == name {
			return true
		}
	}
	return false
}
