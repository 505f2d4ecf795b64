package eval

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Gate is a bound on a Summary figure that a CI job fails on: KEY=LIMIT.
//
//	hit1-drop=X     hit@1 after is more than X below hit@1 before
//	hit5-drop=X     hit@5 likewise
//	mrr-drop=X      MRR likewise
//	failures=N      more than N recorded loads (calls, invocations) now fail
//	bytes-growth=X  the catalog bytes in view grow by more than X of before
//
// X is a fraction (0.05) or a percentage (5%); N a count. A drop is in
// absolute points (hit@5 0.80 to 0.74 is a drop of 0.06).
type Gate struct {
	Key   string
	Limit float64
}

// The gate keys.
const (
	GateHit1Drop    = "hit1-drop"
	GateHit5Drop    = "hit5-drop"
	GateMRRDrop     = "mrr-drop"
	GateFailures    = "failures"
	GateBytesGrowth = "bytes-growth"
)

// GateKeys lists the gate keys in the order they are documented.
var GateKeys = []string{GateHit1Drop, GateHit5Drop, GateMRRDrop, GateFailures, GateBytesGrowth}

// ErrBadGate is wrapped by every error of ParseGates.
var ErrBadGate = errors.New("bad gate")

// ParseGates parses a comma-separated list of gates, e.g.
// "hit5-drop=0.05,failures=0,bytes-growth=10%".
func ParseGates(s string) ([]Gate, error) {
	var out []Gate
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%w %q: want KEY=LIMIT, KEY one of %s", ErrBadGate, part, strings.Join(GateKeys, ", "))
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		known := false
		for _, k := range GateKeys {
			known = known || k == key
		}
		if !known {
			return nil, fmt.Errorf("%w: unknown key %q, want one of %s", ErrBadGate, key, strings.Join(GateKeys, ", "))
		}
		limit, err := parseLimit(key, val)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %v", ErrBadGate, part, err)
		}
		out = append(out, Gate{Key: key, Limit: limit})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty, want KEY=LIMIT, KEY one of %s", ErrBadGate, strings.Join(GateKeys, ", "))
	}
	return out, nil
}

func parseLimit(key, val string) (float64, error) {
	if key == GateFailures {
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("limit %q is not a count (0 or more)", val)
		}
		return float64(n), nil
	}
	pct := strings.HasSuffix(val, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(val, "%"), 64)
	if err != nil || f < 0 || f != f {
		return 0, fmt.Errorf("limit %q is not a fraction (0.05) or a percentage (5%%)", val)
	}
	if pct {
		f /= 100
	}
	if key != GateBytesGrowth && f > 1 {
		return 0, fmt.Errorf("limit %q: a drop is at most 1 (100%%)", val)
	}
	return f, nil
}

// String is the gate as ParseGates reads it.
func (g Gate) String() string {
	if g.Key == GateFailures {
		return fmt.Sprintf("%s=%d", g.Key, int(g.Limit))
	}
	return fmt.Sprintf("%s=%s", g.Key, strconv.FormatFloat(g.Limit, 'f', -1, 64))
}

// Verdict is one gate checked against a Summary: its figure and whether
// it tripped.
type Verdict struct {
	Gate    string  `json:"gate"`
	Value   float64 `json:"value"`
	Limit   float64 `json:"limit"`
	Tripped bool    `json:"tripped"`
}

// Check checks g against s.
func (g Gate) Check(s Summary) Verdict {
	var v float64
	switch g.Key {
	case GateHit1Drop:
		v = s.RanksBefore.Hit1 - s.RanksAfter.Hit1
	case GateHit5Drop:
		v = s.RanksBefore.Hit5 - s.RanksAfter.Hit5
	case GateMRRDrop:
		v = s.RanksBefore.MRR - s.RanksAfter.MRR
	case GateFailures:
		v = float64(s.Failures)
	case GateBytesGrowth:
		v = s.ByteGrowth()
	}
	// Figures are fractions of counts: compare with a little slack so
	// that a limit equal to the figure does not trip by rounding.
	return Verdict{Gate: g.String(), Value: v, Limit: g.Limit, Tripped: v > g.Limit+1e-9}
}
