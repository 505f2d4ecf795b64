package events

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Partitioned sessions. With N partitions a deployment keeps its sessions
// in N streams instead of one, so that no single stream leader carries
// every trigger. Workers publish exactly as without partitions, on
// <prefix>.<sid>.<kind>; the NATS server maps each such subject, with its
// deterministic partition() mapping of the session's tokens, to
// <prefix>p.<k>.<sid>.<kind>, and stream <stream>-<k> keeps the subjects
// of partition k. A session's partition follows from its id alone
// (PartitionOf computes what the server's mapping computes), so every
// reader finds its stream and subjects without asking anyone.
//
// The processors append their outputs under the partition's prefix
// (PartitionPrefix) directly: the mapping's source, <prefix>.*.>, never
// matches it, so nothing is mapped twice.

// MaxPartitions bounds N.
const MaxPartitions = 64

// PartitionOf is the partition of session sid among n in layout l: the
// FNV-1a hash (32 bits) of the session's subject tokens, concatenated
// without their dots, modulo n, as nats-server's partition(n, ...)
// mapping computes it. n < 2 is one partition: 0.
func PartitionOf(l Layout, sid string, n int) int {
	if n < 2 {
		return 0
	}
	h := fnv.New32a()
	if l == LayoutOwner {
		owner, rest, _ := strings.Cut(sid, ".")
		h.Write([]byte(owner))
		h.Write([]byte(rest))
	} else {
		h.Write([]byte(sid))
	}
	return int(h.Sum32() % uint32(n))
}

// PartitionPrefix is the subject prefix partition k's sessions are kept
// under: <prefix>p.<k>.
func PartitionPrefix(prefix string, k int) string {
	return prefix + "p." + strconv.Itoa(k)
}

// PartitionStream is the name of partition k's stream: <stream>-<k>.
func PartitionStream(stream string, k int) string {
	return stream + "-" + strconv.Itoa(k)
}

// PartitionMapping is the NATS subject mapping that spreads the sessions
// under prefix in layout l over n partitions: its source and destination,
// as a server configuration's mappings block (or an account JWT's) takes
// them.
func PartitionMapping(prefix string, l Layout, n int) (src, dest string) {
	if l == LayoutOwner {
		return prefix + ".*.*.>", fmt.Sprintf("%sp.{{partition(%d,1,2)}}.{{wildcard(1)}}.{{wildcard(2)}}.>", prefix, n)
	}
	return prefix + ".*.>", fmt.Sprintf("%sp.{{partition(%d,1)}}.{{wildcard(1)}}.>", prefix, n)
}

// CheckPartitions reports whether n is a partition count this package
// supports: 0 or 1 (no partitions) up to MaxPartitions.
func CheckPartitions(n int) error {
	if n < 0 || n > MaxPartitions {
		return fmt.Errorf("partitions %d: want 0 (none) to %d", n, MaxPartitions)
	}
	return nil
}
