package catalog

import (
	"crypto/sha256"
	"encoding/binary"
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
}

// InCanary reports whether a session takes a release's candidate. It is a
// pure function of the tenant, the session id, the skill's name and the
// candidate: every member, a restart and a replay decide alike, and a
// session keeps its answer while the release is unchanged. The session's
// place is a hash in [0, FullShare); it takes the candidate when that place
// is below the share, so raising a share keeps every session that already
// took the candidate, and a new candidate draws its sessions afresh.
func InCanary(tenant, session string, r Release) bool {
	if r.Share <= 0 {
		return false
	}
	if r.Share >= FullShare {
		return true
	}
	return cohortPlace(tenant, session, r.Name, r.Candidate) < uint64(r.Share)
}

// cohortPlace is a session's place for one release, in [0, FullShare).
// Each input is length-prefixed so that no two inputs share a hash input.
func cohortPlace(tenant, session, name, candidate string) uint64 {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{"skillstream cohort v1", tenant, session, name, candidate} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	sum := h.Sum(nil)
	return binary.BigEndian.Uint64(sum[:8]) % FullShare
}

// Cohort returns the Query.Canary of a session: the names of the releases
// whose candidate it takes (InCanary), sorted and joined with commas; ""
// when it takes none.
func Cohort(tenant, session string, releases []Release) string {
	var names []string
	for _, r := range releases {
		if InCanary(tenant, session, r) {
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
