package projection

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/usage"
)

// TestHourBounds: an hour keeps at most HourSkills rows (the rest under
// _other), HourListed names, HourCodes codes a row and HourQueries
// queries, and stays under MaxHourBytes however hostile its records,
// saying what it cut.
func TestHourBounds(t *testing.T) {
	at := time.Now()
	h := newHour(1, at)
	seq := uint64(0)
	apply := func(out usage.Output) {
		seq++
		h.Apply(out, seq, at)
	}
	for i := range HourSkills + 50 {
		apply(usage.Output{Kind: usage.OutputLoad, Session: "s" + strconv.Itoa(i), Skill: "skill-" + strconv.Itoa(i),
			Digest: strings.Repeat("d", 64) + strconv.Itoa(i%40), Revision: uint64(i)})
	}
	for i := range 40 {
		apply(usage.Output{Kind: usage.OutputSkillError, Session: "s", Skill: "skill-1", Code: "code-" + strconv.Itoa(i)})
		apply(usage.Output{Kind: usage.OutputLoad, Session: "s", Skill: "skill-2", Digest: "digest-" + strconv.Itoa(i), Revision: uint64(i + 1)})
	}
	names := make([]string, HourListed+10)
	for i := range names {
		names[i] = "listed-" + strconv.Itoa(i)
	}
	apply(usage.Output{Kind: usage.OutputCatalog, Session: "s", Update: "initial", TextBytes: 10, Listed: names})
	for i := range HourQueries + 5 {
		apply(usage.Output{Kind: usage.OutputSearch, Session: "s", Search: &events.SearchValue{Query: "q" + strconv.Itoa(i)}})
	}
	if len(h.Skills) != HourSkills+1 || h.Skills[usage.OtherSkill].Loads != 50 {
		t.Errorf("%d rows, _other %+v; want %d rows, 50 loads under _other", len(h.Skills), h.Skills[usage.OtherSkill], HourSkills+1)
	}
	if r := h.Skills["skill-1"]; len(r.Errors) != HourCodes || r.Errors[otherCode] != 40-(HourCodes-1) {
		t.Errorf("codes %v", r.Errors)
	}
	if r := h.Skills["skill-2"]; len(r.Digests) != HourDigests || len(r.Revisions) != HourRevisions || !r.SetsCut {
		t.Errorf("skill-2 keeps %d digests, %d revisions, cut %v", len(r.Digests), len(r.Revisions), r.SetsCut)
	}
	if len(h.Catalogs.Listed) != HourListed || !h.Catalogs.ListedCut {
		t.Errorf("%d names listed, cut %v", len(h.Catalogs.Listed), h.Catalogs.ListedCut)
	}
	if len(h.Search.NoMatchQueries) != HourQueries || h.Search.NoMatchOther != 5 || h.Search.NoMatch != HourQueries+5 {
		t.Errorf("queries %d, other %d", len(h.Search.NoMatchQueries), h.Search.NoMatchOther)
	}
	b, err := h.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxHourBytes {
		t.Errorf("%d bytes encoded, more than %d", len(b), MaxHourBytes)
	}
	back, err := DecodeHour(b)
	if err != nil {
		t.Fatal(err)
	}
	loads := 0
	for _, r := range back.Skills {
		loads += r.Loads
	}
	if loads != HourSkills+50+40 || back.Seq != seq || back.Records != int(seq) {
		t.Errorf("decoded: %d loads, seq %d, %d records; want %d, %d, %d", loads, back.Seq, back.Records, HourSkills+90, seq, seq)
	}
}

// TestHourSheds: an hour that would encode larger than MaxHourBytes
// first lowers the precision of its session sketches (no lower than
// MinPrecision), keeping every row, and says so in a report's partial;
// one still too large drops its sets, then folds its least used rows
// into _other, keeping every count.
func TestHourSheds(t *testing.T) {
	at := time.Now()
	crowded := func(digests, codes int) *Hour {
		h := newHour(1, at)
		seq := uint64(0)
		for i := range HourSkills {
			name := "skill-" + strconv.Itoa(i)
			for j := range HourDigests {
				digest := ""
				if j < digests {
					digest = strings.Repeat("d", 60) + strconv.Itoa(j)
				}
				seq++
				h.Apply(usage.Output{Kind: usage.OutputLoad, Session: "s" + strconv.Itoa(j), Skill: name, Digest: digest}, seq, at)
			}
			for c := range codes {
				seq++
				h.Apply(usage.Output{Kind: usage.OutputSkillError, Session: "s", Skill: name, Code: "some-long-error-code-" + strconv.Itoa(c)}, seq, at)
			}
			r := h.Skills[name]
			r.Sessions.densify(Precision) // as a row of more than SparseMax sessions is
			rng := splitmix64(i)
			for range 3000 {
				r.Sessions.Add(rng.next())
			}
		}
		return h
	}
	decode := func(h *Hour) (*Hour, int, int) {
		t.Helper()
		b, err := h.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeHour(b)
		if err != nil {
			t.Fatal(err)
		}
		loads, errs := 0, 0
		for _, r := range back.Skills {
			loads += r.Loads
			for _, n := range r.Errors {
				errs += n
			}
		}
		if len(b) > MaxHourBytes {
			t.Errorf("%d bytes, more than %d", len(b), MaxHourBytes)
		}
		return back, loads, errs
	}

	back, loads, _ := decode(crowded(0, 0))
	if !back.Coarse || back.Shed || len(back.Skills) != HourSkills || loads != HourSkills*HourDigests {
		t.Errorf("coarse %v, %d loads in %d rows; want coarse, %d in %d", back.Coarse, loads, len(back.Skills), HourSkills*HourDigests, HourSkills)
	}
	for name, r := range back.Skills {
		if p := r.Sessions.p; p < MinPrecision || p >= Precision {
			t.Fatalf("%s: precision %d", name, p)
		}
		// Within 5 standard errors: a thousand estimates.
		if n, _ := r.Sessions.Count(); math.Abs(float64(n-3016)) > 5*1.04/math.Sqrt(1<<MinPrecision)*3016 {
			t.Errorf("%s: %d sessions, want about 3,016", name, n)
		}
	}
	m := newMerger(1)
	m.merge(HourKey(at), back)
	if p := m.partial(); len(p) != 1 || !strings.Contains(p[0], "too large for full-precision session sketches") || !strings.Contains(p[0], HourKey(at)) {
		t.Errorf("partial %q", p)
	}

	back, loads, errs := decode(crowded(HourDigests, HourCodes))
	if !back.Coarse || !back.Shed || loads != HourSkills*HourDigests || errs != HourSkills*HourCodes || len(back.Skills) > 101 {
		t.Errorf("coarse %v, shed %v, %d loads and %d errors in %d rows", back.Coarse, back.Shed, loads, errs, len(back.Skills))
	}
}

// TestFoldedSkillsPartial: more distinct skills in an hour than it keeps
// rows for is said in the report's partial, naming the hour; an hour
// that kept every skill adds nothing.
func TestFoldedSkillsPartial(t *testing.T) {
	at := time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)
	h := newHour(1, at)
	for i := range HourSkills + 5 {
		h.Apply(usage.Output{Kind: usage.OutputLoad, Session: "s", Skill: "skill-" + strconv.Itoa(i)}, uint64(i+1), at)
	}
	quiet := newHour(1, at.Add(time.Hour))
	quiet.Apply(usage.Output{Kind: usage.OutputLoad, Session: "s", Skill: "skill-1"}, uint64(HourSkills+6), at.Add(time.Hour))
	m := newMerger(1)
	m.merge(HourKey(at), h)
	m.merge(HourKey(at.Add(time.Hour)), quiet)
	want := usage.FoldedSkills(HourSkills) + " in an hour: " + HourKey(at)
	if got := m.partial(); len(got) != 1 || got[0] != want {
		t.Errorf("partial %q, want [%q]", got, want)
	}
	if rep := m.report(); !hasRowNamed(rep.Skills, usage.OtherSkill) {
		t.Errorf("no %s row", usage.OtherSkill)
	}
}

func hasRowNamed(rows []usage.SkillUsage, name string) bool {
	for _, r := range rows {
		if r.Name == name {
			return true
		}
	}
	return false
}
