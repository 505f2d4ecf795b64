package catalog

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The notice that ends a shortened list, around its two counts: skills
// listed without a description, and skills not listed.
const (
	noticeHead = "(Shortened to fit the catalog size limit: "
	noticeMid  = " skills listed without a description, "
	noticeTail = " skills not listed. Any available skill can still be loaded with the skill tool by its exact name.)"
)

// Notice returns the line that ends a shortened list: bare entries are
// listed without a description, omitted ones not at all.
func Notice(bare, omitted int) string {
	return noticeHead + strconv.Itoa(bare) + noticeMid + strconv.Itoa(omitted) + noticeTail
}

// The notice that ends a list shortened for search (ShortenForSearch),
// around its count of skills not listed.
const (
	searchNoticeHead = "("
	searchNoticeTail = " more skills are available but not listed here. Call the `skill_search` tool to find them by what they do.)"
)

// SearchNotice returns the line that ends a list shortened for search:
// omitted skills are not listed, and the skill_search tool finds them.
func SearchNotice(omitted int) string {
	return searchNoticeHead + strconv.Itoa(omitted) + searchNoticeTail
}

// searchNoticeLen is the length of SearchNotice(omitted), in bytes and
// code points alike (it is ASCII).
func searchNoticeLen(omitted int) int {
	return len(searchNoticeHead) + digits(omitted) + len(searchNoticeTail)
}

// parseSearchNotice reports whether line is a notice SearchNotice could
// have written (for a count of at least one).
func parseSearchNotice(line string) bool {
	rest, ok := strings.CutPrefix(line, searchNoticeHead)
	if !ok {
		return false
	}
	o, ok := strings.CutSuffix(rest, searchNoticeTail)
	return ok && decimal(o) && o != "0"
}

// noticeLen is the length of Notice(bare, omitted), in bytes and code
// points alike (it is ASCII).
func noticeLen(bare, omitted int) int {
	return len(noticeHead) + digits(bare) + len(noticeMid) + digits(omitted) + len(noticeTail)
}

func digits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// parseNotice reports whether line is a notice Notice could have written.
func parseNotice(line string) bool {
	rest, ok := strings.CutPrefix(line, noticeHead)
	if !ok {
		return false
	}
	rest, ok = strings.CutSuffix(rest, noticeTail)
	if !ok {
		return false
	}
	d, o, ok := strings.Cut(rest, noticeMid)
	return ok && decimal(d) && decimal(o)
}

// decimal reports whether s is a count as strconv.Itoa writes it.
func decimal(s string) bool {
	if s == "" || len(s) > 19 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// shortened reports whether a list of entries, with omitted more left out,
// ends with the notice.
func shortened(entries []Entry, omitted int) bool {
	return omitted > 0 || slices.ContainsFunc(entries, func(e Entry) bool { return e.Bare })
}

// hasNotice reports whether a list of entries, with omitted more left out,
// ends with a notice: for a list shortened for search (search set) only
// when some were left out (its bare entries, listed by use, need none);
// otherwise as shortened says.
func hasNotice(entries []Entry, omitted int, search bool) bool {
	if search {
		return omitted > 0
	}
	return shortened(entries, omitted)
}

// bareCount counts the entries listed without a description.
func bareCount(entries []Entry) int {
	n := 0
	for _, e := range entries {
		if e.Bare {
			n++
		}
	}
	return n
}

// listLen is the length of some list text: in code points (what the
// catalog size limit counts) and in UTF-16 code units (what hosts that
// bound a tool's description count).
type listLen struct{ points, units int }

func (l listLen) plus(n int) listLen    { return listLen{l.points + n, l.units + n} }
func (l listLen) add(m listLen) listLen { return listLen{l.points + m.points, l.units + m.units} }

// lineLen is the length of Line(e). A code point beyond the Basic
// Multilingual Plane takes two UTF-16 code units; a byte that is not
// UTF-8 counts as the one code point (and unit) of the U+FFFD a host
// decodes it as.
func lineLen(e Entry) listLen {
	n := len("- `") + len("`")
	l := listLen{n, n}.add(textLen(e.Name))
	if e.Bare {
		return l
	}
	d := e.Description
	l = l.add(textLen(d)).plus(len(": "))
	// Escapes lengthen the line: & becomes &amp;, < and > &lt; and &gt;.
	// (strings.Count looks at many bytes at a time.)
	return l.plus(strings.Count(d, "&")*(len("&amp;")-1) + (strings.Count(d, "<")+strings.Count(d, ">"))*(len("&lt;")-1))
}

// textLen is the length of s in code points and in UTF-16 code units.
func textLen(s string) listLen {
	if isASCII(s) {
		return listLen{len(s), len(s)}
	}
	var l listLen
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			l = l.plus(1)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		l.points++
		l.units++
		if r > 0xFFFF {
			l.units++
		}
		i += size
	}
	return l
}

// Shorten fits entries (sorted by name, as Entries returns them) into
// maxLen code points of list text: the entry lines joined by "\n" and, when
// anything had to give way, a final notice line (Notice) that counts
// toward the limit. maxLen 0 means no limit. precedence gives each entry's
// precedence (see Precedence; higher is kept longer).
//
// The order of sacrifice is the lowest precedence first and, within one
// precedence, the last name in byte order first. Descriptions go first: in
// that order one entry at a time becomes bare ("- `name`") until the text
// fits. If it still does not fit once every description is gone, entries
// are left out in the same order until it does. Shorten returns the
// entries shown (the bare ones with Bare set and an empty Description) and
// how many were left out. Entries that fit are returned as they are.
//
// Only a notice longer than maxLen on its own (counts of billions of
// skills, or a limit below MinMaxLength) can leave the text over the limit.
func Shorten(entries []Entry, precedence func(Entry) int, maxLen int) ([]Entry, int) {
	if maxLen <= 0 {
		return entries, 0
	}
	return shorten(entries, precedence, nil, func(l listLen) bool { return l.points <= maxLen })
}

// ShortenRanked is Shorten with the order of sacrifice taken from rank
// within one precedence: the least used first, and among equally used
// (never used included) the last name in byte order first. A rank without
// a positive count gives exactly Shorten's result.
func ShortenRanked(entries []Entry, precedence func(Entry) int, rank Ranking, maxLen int) ([]Entry, int) {
	if maxLen <= 0 {
		return entries, 0
	}
	return shorten(entries, precedence, rank, func(l listLen) bool { return l.points <= maxLen })
}

// shorten is Shorten with the limit given as fits, which is asked whether
// a list text of a given length is short enough. fits must hold for
// shorter texts whenever it holds for a longer one.
func shorten(entries []Entry, precedence func(Entry) int, rank Ranking, fits func(listLen) bool) ([]Entry, int) {
	if len(entries) == 0 {
		return entries, 0
	}
	full := make([]listLen, len(entries))
	var sum listLen // the lines shown, without separators
	for i, e := range entries {
		full[i] = lineLen(e)
		sum = sum.add(full[i])
	}
	if fits(sum.plus(len(entries) - 1)) {
		return entries, 0
	}
	order := sacrifice(entries, precedence, rank)
	shown, bare, omitted := len(entries), 0, 0
	// The block is the shown lines, a "\n" after each, then the notice
	// (ASCII: as many units as code points).
	fit := func() bool { return fits(sum.plus(shown + noticeLen(bare, omitted))) }
	stripped := make([]bool, len(entries))
	for _, i := range order {
		if fit() {
			break
		}
		b := lineLen(Entry{Name: entries[i].Name, Bare: true})
		sum.points -= full[i].points - b.points
		sum.units -= full[i].units - b.units
		stripped[i] = true
		bare++
	}
	left := make([]bool, len(entries))
	for _, i := range order {
		if fit() {
			break
		}
		b := lineLen(Entry{Name: entries[i].Name, Bare: true})
		sum.points -= b.points
		sum.units -= b.units
		left[i] = true
		shown--
		bare--
		omitted++
	}
	out := make([]Entry, 0, shown)
	for i, e := range entries {
		switch {
		case left[i]:
		case stripped[i]:
			out = append(out, Entry{Name: e.Name, Bare: true})
		default:
			out = append(out, e)
		}
	}
	return out, omitted
}

// sacrifice returns the indexes of entries in the order of sacrifice:
// the lowest precedence first and, within one precedence, the least used
// by rank first (nil: all equal), then the last name in byte order first.
func sacrifice(entries []Entry, precedence func(Entry) int, rank Ranking) []int {
	order := make([]int, len(entries))
	prec := make([]int, len(entries))
	uses := make([]int, len(entries))
	for i, e := range entries {
		order[i] = i
		prec[i] = precedence(e)
		uses[i] = rank.use(e.Name)
	}
	slices.SortFunc(order, func(a, b int) int {
		if prec[a] != prec[b] {
			return prec[a] - prec[b]
		}
		if uses[a] != uses[b] {
			return uses[a] - uses[b]
		}
		return strings.Compare(entries[b].Name, entries[a].Name)
	})
	return order
}

// ShortenForSearch is Shorten for a session to which search is offered
// (Options.SkillSearch and Options.SearchOffered): the list gets fewer
// entries instead of shorter ones. No description is dropped; entries are
// left out, in Shorten's order of sacrifice (the lowest precedence first,
// within one precedence the last name in byte order first), until at most
// maxCount are listed (0: no count limit) and the list text, the final
// notice included, holds at most maxLen code points (0: no limit). When
// entries were left out the list ends with SearchNotice, which tells the
// model that the skill_search tool finds them. It returns the entries
// shown, as they are, and how many were left out.
//
// Only a notice longer than maxLen on its own can leave the text over the
// limit.
func ShortenForSearch(entries []Entry, precedence func(Entry) int, maxLen, maxCount int) ([]Entry, int) {
	return shortenSearch(entries, precedence, nil, func(l listLen) bool { return maxLen <= 0 || l.points <= maxLen }, maxCount)
}

// ShortenForSearchRanked is ShortenForSearch by use. Within one
// precedence the order of sacrifice is the least used by rank first, and
// among equally used (never used included) the last name in byte order
// first. maxCount then counts the entries listed with their description;
// after those, further entries are listed as names without a description
// (Bare), in the same order, while the list text, the notice included,
// still holds at most maxLen code points (0: no limit, so every other
// entry is listed bare). The rest are left out and counted by the notice,
// which is SearchNotice and appears only when some were left out. Entries
// keep their order by name. A rank without a positive count gives exactly
// ShortenForSearch's result.
func ShortenForSearchRanked(entries []Entry, precedence func(Entry) int, rank Ranking, maxLen, maxCount int) ([]Entry, int) {
	return shortenSearch(entries, precedence, rank, func(l listLen) bool { return maxLen <= 0 || l.points <= maxLen }, maxCount)
}

// shortenSearch is ShortenForSearch with the length limit given as fits
// (see shorten).
func shortenSearch(entries []Entry, precedence func(Entry) int, rank Ranking, fits func(listLen) bool, maxCount int) ([]Entry, int) {
	if len(entries) == 0 {
		return entries, 0
	}
	var sum listLen // the lines shown, without separators
	lens := make([]listLen, len(entries))
	for i, e := range entries {
		lens[i] = lineLen(e)
		sum = sum.add(lens[i])
	}
	countFits := func(shown int) bool { return maxCount <= 0 || shown <= maxCount }
	if countFits(len(entries)) && fits(sum.plus(len(entries)-1)) {
		return entries, 0
	}
	if rank.active() {
		return shortenSearchByUse(entries, lens, sacrifice(entries, precedence, rank), fits, countFits)
	}
	shown, omitted := len(entries), 0
	left := make([]bool, len(entries))
	for _, i := range sacrifice(entries, precedence, nil) {
		// The block is the shown lines, a "\n" after each, then the
		// notice (ASCII: as many units as code points).
		if omitted > 0 && countFits(shown) && fits(sum.plus(shown+searchNoticeLen(omitted))) {
			break
		}
		sum.points -= lens[i].points
		sum.units -= lens[i].units
		left[i] = true
		shown--
		omitted++
	}
	out := make([]Entry, 0, shown)
	for i, e := range entries {
		if !left[i] {
			out = append(out, e)
		}
	}
	return out, omitted
}

// shortenSearchByUse is shortenSearch with an active ranking: order is
// the order of sacrifice, lens each entry's line length. It keeps, from
// the end of order, the most entries with their description that
// countFits and fits allow, then as many more bare as fits allows.
func shortenSearchByUse(entries []Entry, lens []listLen, order []int, fits func(listLen) bool, countFits func(int) bool) ([]Entry, int) {
	n := len(entries)
	// The block is the shown lines, a "\n" after each but the last, then
	// (when some are left out) a "\n" and the notice.
	blockLen := func(sum listLen, shown int) listLen {
		if shown == n {
			return sum.plus(shown - 1)
		}
		return sum.plus(shown + searchNoticeLen(n-shown))
	}
	var sum listLen
	full, bare := make([]bool, n), make([]bool, n)
	shown := 0
	k := n - 1 // order[k] is the next entry to keep
	for ; k >= 0; k-- {
		i := order[k]
		if !countFits(shown+1) || !fits(blockLen(sum.add(lens[i]), shown+1)) {
			break
		}
		sum = sum.add(lens[i])
		full[i] = true
		shown++
	}
	for ; k >= 0; k-- {
		i := order[k]
		b := lineLen(Entry{Name: entries[i].Name, Bare: true})
		if !fits(blockLen(sum.add(b), shown+1)) {
			break
		}
		sum = sum.add(b)
		bare[i] = true
		shown++
	}
	out := make([]Entry, 0, shown)
	for i, e := range entries {
		switch {
		case full[i]:
			out = append(out, e)
		case bare[i]:
			out = append(out, Entry{Name: e.Name, Bare: true})
		}
	}
	return out, n - shown
}
