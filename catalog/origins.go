package catalog

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
)

// Origins are the origins (Summary.Origin) of a snapshot's skills by
// name: for each name the first skill of that name, as Entries takes it,
// when that skill has one. The zero Origins has none. Two Origins with
// the same Key name the same revisions and channels.
type Origins struct {
	byName map[string]Origin
	key    string
}

// OriginsOf returns the origins of skills. Skills without an origin (every
// skill outside the skill store) cost a look at each and nothing kept.
func OriginsOf(skills []Summary) Origins {
	has := false
	for _, s := range skills {
		if s.Origin != (Origin{}) {
			has = true
			break
		}
	}
	if !has {
		return Origins{}
	}
	o := Origins{byName: make(map[string]Origin)}
	seen := make(map[string]bool, len(skills))
	var h []byte
	for _, s := range skills {
		if seen[s.Name] {
			continue // the first of a name is the one listed
		}
		seen[s.Name] = true
		if s.Origin == (Origin{}) {
			continue
		}
		o.byName[s.Name] = s.Origin
		for _, f := range []string{s.Name, strconv.FormatUint(s.Origin.Rev, 10), s.Origin.Digest, s.Origin.Channel} {
			h = binary.AppendUvarint(h, uint64(len(f)))
			h = append(h, f...)
		}
	}
	sum := sha256.Sum256(h)
	o.key = hex.EncodeToString(sum[:])
	return o
}

// Of returns the origin of the skill called name, if it has one.
func (o Origins) Of(name string) (Origin, bool) {
	r, ok := o.byName[name]
	return r, ok
}

// Len is the number of skills with an origin.
func (o Origins) Len() int { return len(o.byName) }

// Key names the origins' content: "" for none, else a digest of every
// name with its origin, so that two views of the same text whose skills
// came from different revisions are told apart.
func (o Origins) Key() string { return o.key }
