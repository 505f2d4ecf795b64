package events

import (
	"fmt"
	"strconv"
	"strings"
)

// StoreToken is a read-your-writes token of the skill store: the index
// revision a push wrote and the epoch of the buckets that revision counts
// in, which a trigger carries as minStoreRevision and minStoreEpoch.
// skills push prints it as "<epoch>:<revision>" (String). An empty Epoch
// stands for any epoch, as a trigger without minStoreEpoch does.
type StoreToken struct {
	Epoch    string
	Revision uint64
}

// String is the token as skills push prints it: "<epoch>:<revision>", or
// the revision alone when there is no epoch.
func (t StoreToken) String() string {
	if t.Epoch == "" {
		return strconv.FormatUint(t.Revision, 10)
	}
	return t.Epoch + ":" + strconv.FormatUint(t.Revision, 10)
}

// ParseStoreToken reads a token as String writes it: "<epoch>:<revision>",
// or a revision alone (the revision printed before tokens named their
// epoch: any epoch). An error says what is wrong.
func ParseStoreToken(s string) (StoreToken, error) {
	epoch, rev, ok := strings.Cut(s, ":")
	if !ok {
		epoch, rev = "", s
	} else if err := checkStoreEpoch(epoch); err != nil || epoch == "" {
		return StoreToken{}, fmt.Errorf("store token %q: the epoch before the colon is not a store epoch (1 to %d of A-Z a-z 0-9 _ -)",
			truncated(s), MaxEpochLength)
	}
	n, err := strconv.ParseUint(rev, 10, 64)
	if err != nil {
		return StoreToken{}, fmt.Errorf("store token %q: want <epoch>:<revision> or a revision, as skills push prints them", truncated(s))
	}
	return StoreToken{Epoch: epoch, Revision: n}, nil
}

// truncated is at most 80 bytes of s, for an error.
func truncated(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
