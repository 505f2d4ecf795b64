package projection

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/usage"
)

// Bounds of one hour bucket, so that it always fits in one message of the
// bucket: what lies beyond them is counted as usage.Read counts what lies
// beyond its own bounds (under usage.OtherSkill, in NoMatchOther) or, for
// sets, marked as cut.
const (
	// HourSkills is how many skill rows an hour keeps; the records of
	// further skills count under usage.OtherSkill, as do found skills
	// past it.
	HourSkills = 1000
	// HourListed is how many listed skill names an hour keeps.
	HourListed = 2000
	// HourCodes is how many error codes a row keeps, "_other" (the
	// codes past the others) included.
	HourCodes = 32
	// HourDigests and HourRevisions are how many digests and revisions a
	// skill row keeps per hour.
	HourDigests   = 16
	HourRevisions = 32
	// HourFoundPairs is how many (session, skill) pairs a search returned
	// an hour keeps, to count the loads that followed them; past it a
	// load after a search is not counted as one.
	HourFoundPairs = 4096
	// HourQueries and HourQueryBytes bound the queries that matched
	// nothing an hour keeps; further ones count in NoMatchOther.
	HourQueries    = 100
	HourQueryBytes = 32 << 10
	// MaxHourBytes is the largest encoded hour: a larger one first lowers
	// the precision of its session sketches, step by step down to
	// MinPrecision (Hour.Coarse says so), then sheds its sets (names
	// listed, digests, revisions, queries) and, if still too large, all
	// but its most used rows (Hour.Shed says so).
	MaxHourBytes = 768 << 10
)

// otherCode is the error code row of codes past HourCodes.
const otherCode = "_other"

// hourVersion is the version of the hour bucket format.
const hourVersion = 1

// Hour is one hour bucket (UTC) of the projection: the sums of the output
// records whose stream time falls in that hour. It is stored as JSON
// under the key h.<YYYYMMDDHH>.
type Hour struct {
	V int `json:"v"`
	// Gen is the generation of the projection that wrote it (Position.Gen);
	// a bucket of another generation is not counted.
	Gen uint64 `json:"gen"`
	// Hour is the hour's start, Unix seconds.
	Hour int64 `json:"hour"`
	// Seq is the highest stream sequence applied to the bucket: every
	// output record of the hour up to Seq is counted, none after it.
	Seq uint64 `json:"seq"`
	// Records and Unreadable are as in usage.Report.
	Records    int `json:"records"`
	Unreadable int `json:"unreadable"`
	// Skills are the rows, by row name (usage.RowName).
	Skills   map[string]*SkillHour `json:"skills,omitempty"`
	Catalogs CatalogHour           `json:"catalogs"`
	Search   SearchHour            `json:"search"`
	// Shed says the hour outgrew MaxHourBytes and dropped detail; Damaged
	// that it replaced a value that could not be read, so its counts
	// before that are lost (usage --rebuild counts them again).
	Shed    bool `json:"shed,omitempty"`
	Damaged bool `json:"damaged,omitempty"`
	// Coarse says the hour lowered the precision of its session sketches
	// to fit, so that its distinct sessions are estimated less closely.
	Coarse bool `json:"coarse,omitempty"`

	listed map[string]struct{} // Catalogs.Listed as a set, while applying
	// listedKeys are the lists (usage.Output.ListedKey) added to listed
	// while applying: the same list again adds nothing.
	listedKeys map[string]struct{}
}

// SkillHour is one skill's row in an hour.
type SkillHour struct {
	Loads       int            `json:"loads,omitempty"`
	Invocations int            `json:"invocations,omitempty"`
	Errors      map[string]int `json:"errors,omitempty"`
	Sessions    Sketch         `json:"sessions"`
	// First and Last are the times of its first and last record, Unix
	// nanoseconds.
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	// Digests and Revisions are those its loads carried, sorted, at most
	// HourDigests and HourRevisions; SetsCut says some were left out.
	Digests   []string `json:"digests,omitempty"`
	Revisions []uint64 `json:"revisions,omitempty"`
	SetsCut   bool     `json:"setsCut,omitempty"`
	// AfterSearch counts its loads that followed, in the same hour, a
	// search of the same session that returned it (once per session).
	AfterSearch int `json:"afterSearch,omitempty"`
	// Releases split loads and errors by revision and channel (see
	// usage.SkillUsage.Releases), keyed "<rev>:<channel>", at most
	// HourRevisions (SetsCut says some were left out).
	Releases map[string]*ReleaseHour `json:"releases,omitempty"`
}

// ReleaseHour is one revision and channel's part of a skill's row.
type ReleaseHour struct {
	Loads  int `json:"loads,omitempty"`
	Errors int `json:"errors,omitempty"`
}

// releaseKey is the key of a revision and channel in SkillHour.Releases.
func releaseKey(rev uint64, channel string) string {
	return strconv.FormatUint(rev, 10) + ":" + channel
}

// parseReleaseKey reads a releaseKey back.
func parseReleaseKey(k string) (usage.ReleaseKey, bool) {
	rev, channel, ok := strings.Cut(k, ":")
	if !ok {
		return usage.ReleaseKey{}, false
	}
	n, err := strconv.ParseUint(rev, 10, 64)
	if err != nil {
		return usage.ReleaseKey{}, false
	}
	return usage.ReleaseKey{Rev: n, Channel: channel}, true
}

// release is the part of revision rev served through channel, nil when
// the record names none or past the bound.
func (r *SkillHour) release(rev uint64, channel string) *ReleaseHour {
	if rev == 0 && channel == "" {
		return nil
	}
	k := releaseKey(rev, channel)
	if rh, ok := r.Releases[k]; ok {
		return rh
	}
	if len(r.Releases) >= HourRevisions {
		r.SetsCut = true
		return nil
	}
	if r.Releases == nil {
		r.Releases = map[string]*ReleaseHour{}
	}
	rh := &ReleaseHour{}
	r.Releases[k] = rh
	return rh
}

// CatalogHour sums the catalogs appended in an hour.
type CatalogHour struct {
	Appends map[string]int   `json:"appends,omitempty"`
	Bytes   map[string]int64 `json:"bytes,omitempty"`
	// Listed are the distinct skill names listed, sorted, at most
	// HourListed; ListedCut says some were left out.
	Listed    []string `json:"listed,omitempty"`
	ListedCut bool     `json:"listedCut,omitempty"`
}

// SearchHour sums the searches answered in an hour.
type SearchHour struct {
	Searches int            `json:"searches,omitempty"`
	Found    int            `json:"found,omitempty"`
	NoMatch  int            `json:"noMatch,omitempty"`
	Errors   map[string]int `json:"errors,omitempty"`
	Sessions Sketch         `json:"sessions"`
	// Skills counts the search results that listed each skill.
	Skills map[string]int `json:"skills,omitempty"`
	// NoMatchQueries counts the queries that matched nothing;
	// NoMatchOther the searches of queries past HourQueries.
	NoMatchQueries map[string]int `json:"noMatchQueries,omitempty"`
	NoMatchOther   int            `json:"noMatchOther,omitempty"`
	// ThenLoaded counts the skills a search returned that the same
	// session then loaded within the hour (a pair once). Pairs holds the
	// pairs returned so far, keyed by a hash of session and skill, true
	// once loaded; at most HourFoundPairs (PairsCut says some were left
	// out, so ThenLoaded may count short).
	ThenLoaded int             `json:"thenLoaded,omitempty"`
	Pairs      map[string]bool `json:"pairs,omitempty"`
	PairsCut   bool            `json:"pairsCut,omitempty"`
}

// pairKey names the pair of a session and a skill in SearchHour.Pairs.
func pairKey(sid, skill string) string {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], HashSession(sid))
	h.Write(b[:])
	h.Write([]byte(skill))
	return strconv.FormatUint(h.Sum64(), 36)
}

// found notes that a search of sid returned skill.
func (s *SearchHour) found(sid, skill string) {
	k := pairKey(sid, skill)
	if _, ok := s.Pairs[k]; ok {
		return
	}
	if len(s.Pairs) >= HourFoundPairs {
		s.PairsCut = true
		return
	}
	if s.Pairs == nil {
		s.Pairs = map[string]bool{}
	}
	s.Pairs[k] = false
}

// loaded reports whether sid loading skill follows a search of sid that
// returned it, not counted yet; it marks the pair counted.
func (s *SearchHour) loaded(sid, skill string) bool {
	k := pairKey(sid, skill)
	if done, ok := s.Pairs[k]; !ok || done {
		return false
	}
	s.Pairs[k] = true
	s.ThenLoaded++
	return true
}

// HourKey is the key of the hour bucket of t: h.<YYYYMMDDHH>, UTC.
func HourKey(t time.Time) string {
	return "h." + t.UTC().Format("2006010215")
}

// hourOfKey reads an hour key back.
func hourOfKey(key string) (time.Time, error) {
	if len(key) != 12 || key[:2] != "h." {
		return time.Time{}, fmt.Errorf("not an hour key: %q", key)
	}
	return time.ParseInLocation("2006010215", key[2:], time.UTC)
}

// newHour returns the empty bucket of generation gen for the hour of t.
func newHour(gen uint64, t time.Time) *Hour {
	return &Hour{V: hourVersion, Gen: gen, Hour: t.UTC().Truncate(time.Hour).Unix()}
}

// Apply counts one output record, read at stream sequence seq and time
// at, into the hour. The caller has checked that seq is above h.Seq.
func (h *Hour) Apply(out usage.Output, seq uint64, at time.Time) {
	h.Seq = seq
	h.Records++
	switch out.Kind {
	case usage.OutputCatalog:
		c := &h.Catalogs
		c.Appends = inc(c.Appends, out.Update, 1)
		if c.Bytes == nil {
			c.Bytes = map[string]int64{}
		}
		c.Bytes[out.Update] += out.TextBytes
		h.list(out.Listed, out.ListedKey)
	case usage.OutputLoad:
		r := h.row(out.Skill)
		r.Loads++
		if h.Search.loaded(out.Session, out.Skill) {
			r.AfterSearch++
		}
		r.digest(out.Digest)
		r.revision(out.Revision)
		if rh := r.release(out.Rev, out.Channel); rh != nil {
			rh.Loads++
		}
		r.seen(out.Session, at)
	case usage.OutputSkillError:
		r := h.row(out.Skill)
		code := out.Code
		if _, ok := r.Errors[code]; !ok && len(r.Errors) >= HourCodes-1 {
			code = otherCode
		}
		r.Errors = inc(r.Errors, code, 1)
		if rh := r.release(out.Rev, out.Channel); rh != nil {
			rh.Errors++
		}
		r.seen(out.Session, at)
	case usage.OutputInvocation:
		r := h.row(out.Skill)
		r.Invocations++
		r.seen(out.Session, at)
	case usage.OutputSearch:
		h.searched(out.Session, out.Search)
	case usage.OutputSearchError:
		s := &h.Search
		s.Searches++
		s.Errors = inc(s.Errors, out.Code, 1)
		s.Sessions.Add(HashSession(out.Session))
	default:
		h.Unreadable++
	}
}

// searched counts a search answered with v, as usage.Read does.
func (h *Hour) searched(sid string, v *events.SearchValue) {
	s := &h.Search
	s.Searches++
	s.Sessions.Add(HashSession(sid))
	query := v.Query
	if v.Total <= 0 && len(v.Results) == 0 {
		s.NoMatch++
		if _, ok := s.NoMatchQueries[query]; ok || (len(s.NoMatchQueries) < HourQueries && queryBytes(s.NoMatchQueries)+len(query) <= HourQueryBytes) {
			s.NoMatchQueries = inc(s.NoMatchQueries, query, 1)
		} else {
			s.NoMatchOther++
		}
		return
	}
	s.Found++
	for _, e := range v.Results {
		name := e.Name
		if catalog.CheckName(name) != nil {
			name = usage.InvalidSkill
		}
		if _, ok := s.Skills[name]; !ok && len(s.Skills) >= HourSkills {
			name = usage.OtherSkill
		}
		s.Skills = inc(s.Skills, name, 1)
		if name == e.Name {
			s.found(sid, name)
		}
	}
}

func queryBytes(m map[string]int) int {
	n := 0
	for q := range m {
		n += len(q)
	}
	return n
}

// row returns the row of a skill name, creating it.
func (h *Hour) row(name string) *SkillHour {
	name = usage.RowName(name)
	if r, ok := h.Skills[name]; ok {
		return r
	}
	if h.Skills == nil {
		h.Skills = map[string]*SkillHour{}
	}
	if len(h.Skills) >= HourSkills {
		name = usage.OtherSkill
		if r, ok := h.Skills[name]; ok {
			return r
		}
	}
	r := &SkillHour{}
	h.Skills[name] = r
	return r
}

// maxListedKeys bounds Hour.listedKeys; past it the memory starts again.
const maxListedKeys = 1024

// list adds the names a catalog listed; key, when set, names the list
// (usage.Output.ListedKey), so that a list added already is not walked
// again.
func (h *Hour) list(names []string, key string) {
	if len(names) == 0 {
		return
	}
	if key != "" {
		if _, ok := h.listedKeys[key]; ok {
			return
		}
		if h.listedKeys == nil || len(h.listedKeys) >= maxListedKeys {
			h.listedKeys = map[string]struct{}{}
		}
		h.listedKeys[key] = struct{}{}
	}
	c := &h.Catalogs
	if h.listed == nil {
		h.listed = make(map[string]struct{}, len(c.Listed))
		for _, n := range c.Listed {
			h.listed[n] = struct{}{}
		}
	}
	added := false
	for _, n := range names {
		if _, ok := h.listed[n]; ok {
			continue
		}
		if len(h.listed) >= HourListed {
			c.ListedCut = true
			continue
		}
		h.listed[n] = struct{}{}
		added = true
	}
	if added {
		c.Listed = c.Listed[:0]
		for n := range h.listed {
			c.Listed = append(c.Listed, n)
		}
		sort.Strings(c.Listed)
	}
}

func (r *SkillHour) seen(sid string, at time.Time) {
	r.Sessions.Add(HashSession(sid))
	ns := at.UnixNano()
	if r.First == 0 || ns < r.First {
		r.First = ns
	}
	if ns > r.Last {
		r.Last = ns
	}
}

func (r *SkillHour) digest(d string) {
	if d == "" {
		return
	}
	i, found := slices.BinarySearch(r.Digests, d)
	switch {
	case found:
	case len(r.Digests) >= HourDigests:
		r.SetsCut = true
	default:
		r.Digests = slices.Insert(r.Digests, i, d)
	}
}

func (r *SkillHour) revision(v uint64) {
	if v == 0 {
		return
	}
	i, found := slices.BinarySearch(r.Revisions, v)
	switch {
	case found:
	case len(r.Revisions) >= HourRevisions:
		r.SetsCut = true
	default:
		r.Revisions = slices.Insert(r.Revisions, i, v)
	}
}

func inc[V int | int64](m map[string]V, k string, n V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] += n
	return m
}

// Encode writes the hour as JSON, making its session sketches smaller
// and then shedding detail first when it would be larger than
// MaxHourBytes.
func (h *Hour) Encode() ([]byte, error) {
	b, err := json.Marshal(h)
	if err != nil || len(b) <= MaxHourBytes {
		return b, err
	}
	// The highest precision at which the sketches' sizes, worked out
	// without encoding, leave the hour small enough; lower ones if the
	// encoding says otherwise.
	now := h.sketchBytes(Precision)
	for p := uint8(Precision - 1); p >= MinPrecision; p-- {
		if p > MinPrecision && len(b)-now+h.sketchBytes(p) > MaxHourBytes {
			continue
		}
		if !h.coarsen(p) {
			continue
		}
		if b, err = json.Marshal(h); err != nil || len(b) <= MaxHourBytes {
			return b, err
		}
	}
	h.shedSets()
	if b, err = json.Marshal(h); err != nil || len(b) <= MaxHourBytes {
		return b, err
	}
	h.shedRows(100)
	return json.Marshal(h)
}

// sketchBytes is the size of the hour's session sketches encoded, were
// they coarsened to precision p.
func (h *Hour) sketchBytes(p uint8) int {
	n := h.Search.Sessions.encodedLen(p)
	for _, r := range h.Skills {
		n += r.Sessions.encodedLen(p)
	}
	return n
}

// coarsen bounds every session sketch of the hour by the size of a
// HyperLogLog of precision p (Sketch.coarsen), and says whether any
// changed.
func (h *Hour) coarsen(p uint8) bool {
	changed := h.Search.Sessions.coarsen(p)
	for _, r := range h.Skills {
		changed = r.Sessions.coarsen(p) || changed
	}
	h.Coarse = h.Coarse || changed
	return changed
}

// shedSets drops the hour's sets: names listed, digests, revisions and
// queries (counted in NoMatchOther).
func (h *Hour) shedSets() {
	h.Shed = true
	h.Catalogs.Listed, h.listed, h.listedKeys, h.Catalogs.ListedCut = nil, nil, nil, true
	for _, r := range h.Skills {
		r.Digests, r.Revisions, r.SetsCut = nil, nil, true
	}
	for _, n := range h.Search.NoMatchQueries {
		h.Search.NoMatchOther += n
	}
	h.Search.NoMatchQueries = nil
	h.Search.Pairs, h.Search.PairsCut = nil, true
}

// shedRows folds every row but the keep most used into usage.OtherSkill,
// and the found skills likewise.
func (h *Hour) shedRows(keep int) {
	names := make([]string, 0, len(h.Skills))
	for n := range h.Skills {
		if n != usage.OtherSkill {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := h.Skills[names[i]], h.Skills[names[j]]
		return a.Loads+a.Invocations > b.Loads+b.Invocations
	})
	if len(names) > keep {
		other := h.Skills[usage.OtherSkill]
		if other == nil {
			other = &SkillHour{}
			h.Skills[usage.OtherSkill] = other
		}
		for _, n := range names[keep:] {
			other.add(h.Skills[n], SparseMax)
			delete(h.Skills, n)
		}
		other.Errors = foldCodes(other.Errors)
	}
	found := make([]string, 0, len(h.Search.Skills))
	for n := range h.Search.Skills {
		if n != usage.OtherSkill {
			found = append(found, n)
		}
	}
	sort.Slice(found, func(i, j int) bool { return h.Search.Skills[found[i]] > h.Search.Skills[found[j]] })
	if len(found) > keep {
		for _, n := range found[keep:] {
			h.Search.Skills[usage.OtherSkill] += h.Search.Skills[n]
			delete(h.Search.Skills, n)
		}
	}
}

// foldCodes keeps HourCodes codes of m, the rest under otherCode.
func foldCodes(m map[string]int) map[string]int {
	if len(m) <= HourCodes {
		return m
	}
	codes := make([]string, 0, len(m))
	for c := range m {
		if c != otherCode {
			codes = append(codes, c)
		}
	}
	sort.Strings(codes)
	for _, c := range codes[HourCodes-1:] {
		m[otherCode] += m[c]
		delete(m, c)
	}
	return m
}

// add sums row o into r (sets are dropped: only shedRows adds rows).
func (r *SkillHour) add(o *SkillHour, sparseMax int) {
	r.Loads += o.Loads
	r.AfterSearch += o.AfterSearch
	r.Invocations += o.Invocations
	for c, n := range o.Errors {
		r.Errors = inc(r.Errors, c, n)
	}
	r.Sessions.merge(&o.Sessions, sparseMax)
	if o.First != 0 && (r.First == 0 || o.First < r.First) {
		r.First = o.First
	}
	r.Last = max(r.Last, o.Last)
	r.SetsCut = true
}

// DecodeHour reads an hour bucket. A value that is not one (another
// format, a foreign write, a damaged value) is an error saying why.
func DecodeHour(b []byte) (*Hour, error) {
	var h Hour
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("not an hour bucket: %w", err)
	}
	if h.V != hourVersion {
		return nil, fmt.Errorf("hour bucket of format version %d, want %d", h.V, hourVersion)
	}
	for name, r := range h.Skills {
		if r == nil {
			return nil, fmt.Errorf("hour bucket: skill row %q is null", name)
		}
	}
	return &h, nil
}
