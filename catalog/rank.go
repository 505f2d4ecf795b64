package catalog

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Rank says which skills a shortened catalog keeps (flag --catalog-rank).
type Rank string

// The ranks.
const (
	// RankName (or ""): the order of sacrifice within one source is the
	// last name in byte order first, every text as it always was.
	RankName Rank = "name"
	// RankUse: within one source the least used skill is sacrificed
	// first (see Ranking); where search is offered, the listed max counts
	// entries with a description and names without one fill what the
	// size limit leaves (see ShortenForSearchRanked).
	RankUse Rank = "use"
)

// CheckRank reports whether r is a known rank ("" stands for RankName).
func CheckRank(r Rank) error {
	switch r {
	case "", RankName, RankUse:
		return nil
	}
	return fmt.Errorf("catalog rank is %q, it must be %q or %q", string(r), RankName, RankUse)
}

// Ranking is how much each skill was used: a skill's name to its count of
// loads (a name absent, or a count of 0 or less, was never used). A nil or
// empty Ranking, or one without a positive count, ranks by name: every
// text is then exactly as without one.
type Ranking map[string]int

// active reports whether r changes anything: it has a positive count.
func (r Ranking) active() bool {
	for _, n := range r {
		if n > 0 {
			return true
		}
	}
	return false
}

// use is the count of name, 0 for a skill never used.
func (r Ranking) use(name string) int { return max(r[name], 0) }

// Ranked is one skill's use, as a Ranking is recorded.
type Ranked struct {
	Name string `json:"name"`
	Uses int    `json:"uses"`
}

// For returns the part of r that counts for the skills named by entries
// (as Entries returns them): their positive counts, by name in byte order.
// It is what a decision made with r depends on, so a record may keep it
// and rebuild the decision with FromRanked. nil when no entry was used.
func (r Ranking) For(entries []Entry) []Ranked {
	var out []Ranked
	for _, e := range entries {
		if n := r.use(e.Name); n > 0 {
			out = append(out, Ranked{Name: e.Name, Uses: n})
		}
	}
	slices.SortFunc(out, func(a, b Ranked) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// FromRanked returns the Ranking a list of Ranked stands for (nil for
// none). A name given twice keeps its last count.
func FromRanked(list []Ranked) Ranking {
	if len(list) == 0 {
		return nil
	}
	r := make(Ranking, len(list))
	for _, x := range list {
		r[x.Name] = x.Uses
	}
	return r
}

// EncodeRanked writes list compactly, "name=uses" joined by ",", the form
// a catalog record's options carry; DecodeRanked reads it back.
func EncodeRanked(list []Ranked) string {
	var b strings.Builder
	for i, x := range list {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(x.Name)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(x.Uses))
	}
	return b.String()
}

// DecodeRanked reads what EncodeRanked wrote, refusing anything else with
// an error naming what is wrong: an entry without "=", a name that is not
// a skill name, a count that is not a positive decimal, a name twice.
func DecodeRanked(s string) ([]Ranked, error) {
	if s == "" {
		return nil, nil
	}
	var out []Ranked
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		name, n, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("catalog rank entry %q has no \"=\"", part)
		}
		if !ValidName(name) {
			return nil, fmt.Errorf("catalog rank entry %q: %q is not a skill name", part, name)
		}
		if !decimal(n) || n == "0" {
			return nil, fmt.Errorf("catalog rank entry %q: the use count must be a positive integer", part)
		}
		uses, err := strconv.Atoi(n)
		if err != nil {
			return nil, fmt.Errorf("catalog rank entry %q: %v", part, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("catalog rank names %q twice", name)
		}
		seen[name] = true
		out = append(out, Ranked{Name: name, Uses: uses})
	}
	return out, nil
}
