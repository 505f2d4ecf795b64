package catalog

import (
	"context"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SearchToolName is the name of the model-facing search tool, served
// beside the skill tool when Options.SkillSearch is on.
const SearchToolName = "skill_search"

// SearchToolDescription is the search tool's description as registered
// with the model.
const SearchToolDescription = "Search the skills available in this session by what they do. Use it when the task may benefit from a skill that the session skill catalog does not list, then load a skill it finds with the `skill` tool by its exact name."

// SearchToolParameters is the search tool's parameter schema, as exact JSON
// text: a required query, an optional limit and offset.
const SearchToolParameters = `{"type":"object","properties":{"query":{"type":"string","description":"A few words describing the task or the kind of skill needed."},"limit":{"type":"integer","minimum":1,"maximum":16,"description":"Most skills to return (default 8)."},"offset":{"type":"integer","minimum":0,"description":"Skip this many matches, to see more of them."}},"required":["query"]}`

// SearchToolDefinition returns the definition of the search tool.
func SearchToolDefinition() Definition {
	return Definition{Name: SearchToolName, Description: SearchToolDescription, Parameters: SearchToolParameters}
}

// The bounds of the search tool's arguments.
const (
	MaxQueryLength     = 512    // code points of a query, once trimmed
	DefaultSearchLimit = 8      // matches shown when the call gives no limit
	MaxSearchLimit     = 16     // the largest limit
	MaxSearchOffset    = 100000 // the largest offset
)

// CodeBadRequest is the code of a search whose arguments are invalid.
const CodeBadRequest ErrorCode = "bad_request"

// SearchVisible reports whether a tool view offers owner's search tool
// beside owner's skill tool: the catalog is visible (Visible) and the
// first tool named "skill_search" is owner's, by the same rule as the
// skill tool's (the model reaches only the first tool of a name).
func SearchVisible(tools []Tool, owner string) bool {
	if !Visible(tools, owner) {
		return false
	}
	for _, t := range tools {
		if t.Name == SearchToolName {
			return t.Owner == owner
		}
	}
	return false
}

// SearchArgs are the search tool's arguments as the model gave them, each
// nil when absent (or null), else its decoded value: a string, a bool, an
// integer or floating-point number of any Go type, or anything else (an
// array, an object) for ParseSearchArgs to refuse by its type. Arguments
// the tool does not take are not kept: they are ignored.
type SearchArgs struct {
	Query  any
	Limit  any
	Offset any
}

// SearchRequest is a search whose arguments hold: the query trimmed, the
// limit and offset given or defaulted.
type SearchRequest struct {
	Query  string
	Limit  int
	Offset int
}

// searchArgsPrefix begins the message of every argument error.
const searchArgsPrefix = "invalid search arguments: "

// ParseSearchArgs checks the search tool's arguments: query a string of 1
// to MaxQueryLength code points once white space (unicode.IsSpace) is
// trimmed from its ends, valid UTF-8 without control characters other than
// white space; limit an integer from 1 to MaxSearchLimit (default
// DefaultSearchLimit); offset an integer from 0 to MaxSearchOffset (default
// 0). A number with no fractional part is an integer; a number given as a
// string is not. The first argument that does not hold gives a CodeBadRequest
// error whose message is "invalid search arguments: " and what is wrong.
func ParseSearchArgs(a SearchArgs) (SearchRequest, *ToolError) {
	bad := func(what string) (SearchRequest, *ToolError) {
		return SearchRequest{}, &ToolError{Code: CodeBadRequest, Message: searchArgsPrefix + what}
	}
	var q string
	switch v := a.Query.(type) {
	case nil:
		return bad("query is missing")
	case string:
		q = v
	default:
		return bad("query must be a string, not " + typeOf(v))
	}
	if !utf8.ValidString(q) {
		return bad("query is not valid UTF-8")
	}
	q = strings.TrimSpace(q)
	if q == "" {
		return bad("query is empty")
	}
	if n := utf8.RuneCountInString(q); n > MaxQueryLength {
		return bad("query has " + strconv.Itoa(n) + " code points once trimmed, at most " + strconv.Itoa(MaxQueryLength) + " are allowed")
	}
	for _, r := range q {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return bad("query holds the control character " + codePoint(r))
		}
	}
	limit, ok := intArg(a.Limit, DefaultSearchLimit, 1, MaxSearchLimit)
	if !ok {
		return bad("limit must be an integer from 1 to " + strconv.Itoa(MaxSearchLimit) + ", not " + valueOf(a.Limit))
	}
	offset, ok := intArg(a.Offset, 0, 0, MaxSearchOffset)
	if !ok {
		return bad("offset must be an integer from 0 to " + strconv.Itoa(MaxSearchOffset) + ", not " + valueOf(a.Offset))
	}
	return SearchRequest{Query: q, Limit: limit, Offset: offset}, nil
}

// intArg reads an integer argument v of lo to hi, def when absent.
func intArg(v any, def, lo, hi int) (int, bool) {
	if v == nil {
		return def, true
	}
	n, _, ok := number(v)
	if !ok || n != math.Trunc(n) || n < float64(lo) || n > float64(hi) {
		return 0, false
	}
	return int(n), true
}

// number reads v, a number of any Go type: its value (every integer of
// interest is exact in a float64), its text as written, and whether it is
// a number at all.
func number(v any) (float64, string, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), strconv.FormatInt(rv.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), strconv.FormatUint(rv.Uint(), 10), true
	case reflect.Float32:
		return rv.Float(), strconv.FormatFloat(rv.Float(), 'g', -1, 32), true
	case reflect.Float64:
		return rv.Float(), strconv.FormatFloat(rv.Float(), 'g', -1, 64), true
	}
	return 0, "", false
}

// valueOf names a refused argument in an error: a number as written, any
// other value by its type.
func valueOf(v any) string {
	if _, text, ok := number(v); ok {
		return text
	}
	return typeOf(v)
}

// typeOf names the JSON type of an argument's value, with its article.
func typeOf(v any) string {
	if v == nil {
		return "null"
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	if _, _, ok := number(v); ok {
		return "a number"
	}
	return "a value of another type"
}

// codePoint writes r as U+XXXX.
func codePoint(r rune) string {
	h := strings.ToUpper(strconv.FormatInt(int64(r), 16))
	if len(h) < 4 {
		h = strings.Repeat("0", 4-len(h)) + h
	}
	return "U+" + h
}

// Matches are what a search index found for one query: the skills of one
// page, in rank order, and how many match in all.
type Matches struct {
	Skills []Summary
	Total  int
	// Learned names the version of what the index learned that ranked
	// them ("" when it learned nothing: the skills' text alone). It is
	// recorded, never shown to the model.
	Learned string
	// LearnedTerms is what of the learned terms ranked them (nil for
	// nothing), recorded so that a replay can rebuild the ranking; never
	// shown to the model.
	LearnedTerms []LearnedTerm
}

// LearnedTerm is, for one term of a query, the skills whose learned terms
// held it when a search ran, each with its weight there.
type LearnedTerm struct {
	Term   string
	Skills []LearnedWeight
}

// LearnedWeight is one skill's weight for a learned term.
type LearnedWeight struct {
	Name   string
	Weight float64
}

// Searcher is what Search needs from the search index, already bound to
// the calling session's working directory and project scope: the page of
// at most limit matches of text after the first offset ones, best first,
// and their total. Its candidates are the skills the session's catalog
// would list with no size limit: the snapshot's winners, model-invocable
// only.
type Searcher interface {
	Search(ctx context.Context, text string, limit, offset int) (Matches, error)
}

// SearchValue is the success value of the search tool: the query as
// searched (trimmed), the offset, the number of matches in all, and the
// matches shown, each a name and its description normalised and capped as
// a catalog entry's (Entries), not escaped.
type SearchValue struct {
	Query        string
	Offset       int
	Total        int
	Results      []Entry
	Learned      string        // Matches.Learned: recorded, not shown
	LearnedTerms []LearnedTerm // Matches.LearnedTerms: recorded, not shown
}

// SearchResult is the outcome of one search: exactly one of Value and Err
// is set.
type SearchResult struct {
	Value *SearchValue
	Err   *ToolError
}

// searchFailed is the message of an index error that has none.
const searchFailed = "skill search failed"

// Search runs the search tool for the model's arguments: they are checked
// first (ParseSearchArgs: a CodeBadRequest error, and s is not consulted),
// then s finds the page of matches. Each match shown is formed as a catalog
// entry (its description normalised and capped at
// opts.DescriptionMaxLength); a match that could not be a catalog entry (a
// name outside the grammar, a skill the model may not invoke) is not shown.
// An error of s is a CodeProvider error whose message is its text. No
// match at all is no error: the Value then has no Results.
func Search(ctx context.Context, s Searcher, args SearchArgs, opts Options) SearchResult {
	req, terr := ParseSearchArgs(args)
	if terr != nil {
		return SearchResult{Err: terr}
	}
	m, err := s.Search(ctx, req.Query, req.Limit, req.Offset)
	if err != nil {
		msg := err.Error()
		if msg == "" {
			msg = searchFailed
		}
		return SearchResult{Err: &ToolError{Code: CodeProvider, Message: msg}}
	}
	results := make([]Entry, 0, min(len(m.Skills), req.Limit))
	for _, sk := range m.Skills {
		if len(results) == req.Limit {
			break
		}
		if !ValidName(sk.Name) || !sk.Invocation.ModelInvocable {
			continue
		}
		results = append(results, Entry{Name: sk.Name, Description: Normalize(sk.Description, opts.DescriptionMaxLength)})
	}
	total := max(m.Total, 0)
	if len(results) > 0 {
		total = max(total, req.Offset+len(results))
	}
	return SearchResult{Value: &SearchValue{Query: req.Query, Offset: req.Offset, Total: total, Results: results, Learned: m.Learned, LearnedTerms: m.LearnedTerms}}
}

// Text returns exactly what the model reads for this result: "Error: " and
// the message for a failure; for matches shown, the skill_search_results
// block, one catalog entry line each, a line saying how to see more when
// more match, and the reminder to load a skill before following it; for
// none (no match, or an offset past them all), the sentence saying so. A
// zero SearchResult reads as an error.
func (r SearchResult) Text() string {
	if r.Err != nil {
		return "Error: " + r.Err.Message
	}
	v := r.Value
	if v == nil {
		return "Error: " + searchFailed
	}
	query := attrEscaper.Replace(v.Query)
	if len(v.Results) == 0 {
		return `No available skill matches "` + query + `". Continue without a skill, or search again with other words.`
	}
	k := len(v.Results)
	var b []byte
	b = append(b, `<skill_search_results query="`...)
	b = append(b, query...)
	b = append(b, `" shown="`...)
	b = strconv.AppendInt(b, int64(k), 10)
	b = append(b, `" total="`...)
	b = strconv.AppendInt(b, int64(v.Total), 10)
	b = append(b, "\">\n"...)
	for _, e := range v.Results {
		b = appendLine(b, e)
		b = append(b, '\n')
	}
	b = append(b, "</skill_search_results>"...)
	if next := v.Offset + k; next < v.Total {
		b = append(b, "\nMore matches: call `skill_search` again with \"offset\": "...)
		b = strconv.AppendInt(b, int64(next), 10)
		b = append(b, '.')
	}
	b = append(b, "\n\nLoad a skill with the `skill` tool by its exact name before following it."...)
	return string(b)
}
