// Package search is the index behind the skill_search tool: it ranks the
// skills a registry offers a session by how well their text matches a
// few words describing a task.
//
// # Candidates
//
// Search(ctx, q, text, limit, offset) searches exactly the skills an
// unlimited catalog of q's session lists: the winners of the registry's
// snapshot for q (working directory and store project), model-invocable
// only. A shadowed skill is no candidate, so its words never match; a
// skill the model may not invoke never matches either. An incomplete
// snapshot (a provider failed) is searched for what resolved, and the
// Result says so (Complete false).
//
// # Ranking
//
// A skill's text is three fields: its name (whose dash-separated words
// are words like any other), its description and its whenToUse; with
// Options.Bodies, a fourth, its instruction body (see Bodies below).
// Without it the body is not searched, nor read.
//
// Text becomes terms the same way for skills and for queries: words are
// runs of letters and digits, lower-cased ("k8s", "OOMKilled"); an
// apostrophe inside a word joins it ("doesn't" is "doesnt") and a
// possessive "'s" is dropped; words of one character, of more than 40
// bytes, and English stop words (the Snowball list, with contractions and
// a little request filler such as "please") are left out; a word of
// ASCII letters becomes its Porter2 stem ("deploying", "deployments" →
// "deploy"), any other word stays as it is. A query counts its first 64
// distinct terms.
//
// Each query term scores a skill by BM25F: the term's frequency in each
// field, weighted (name 2, description 1, whenToUse 1) and normalised by
// the field's length against its average over the candidates (b: name
// 0.3, the others 0.75), summed, saturated with k1 = 1.2, and multiplied
// by the term's inverse document frequency among the candidates,
// ln(1 + (N − df + 0.5)/(df + 0.5)). A query word also matches, at half
// weight, the terms it only partly is: when it has at least four bytes,
// the terms it begins and the terms of four bytes or more that begin it
// ("config" and "configur", "postgresql" and "postgr"); when it has at
// least six, the terms that share its first six ("respond" and
// "respons"); at most 32 such terms per word, the first in byte order,
// and a word counts once per skill, with the best of its terms. Last, a
// skill's score is multiplied by the square root of the share of the
// query's words it matched, so that a skill matching most of a task's
// words goes before one matching a single rare word.
//
// # Learned terms
//
// Learn(skill, query, at) adds a query's terms to a skill's learned
// field: a search followed by a load of that skill (the caller finds
// such pairs in the log). A query term scores a candidate there too: the
// pairs' weights, each 2^(−age/Options.LearnHalfLife) with the age
// reckoned to the latest instant learned (not the clock: the same pairs
// give the same ranking on every process), summed, times 0.2, saturated
// with k1, and multiplied by the idf of the candidates holding the term
// in their text or learned field. A candidate's learned field counts for
// a query only when it holds at least half of the query's terms, and at
// least two (both of a two-term query): a word a past query shared with
// this one by chance says nothing. That score adds to the word's best
// score from the text, and a word matched only there counts as matched
// for the coverage factor. A term keeps its 32 strongest
// skills; Options.MaxLearned (default 65,536) bounds the (term, skill)
// pairs. Learning costs a few map updates, whatever the number of
// skills; nothing is rebuilt. Learned returns the version (the pairs
// learned and a digest of them in order), which every Result carries,
// with LearnedTerms: all the ranking took from the learned field (for
// each query term, the candidates that learned it and their weights; at
// most 64 terms of 32 skills). SearchWith ranks the same candidates with
// recorded LearnedTerms instead of what the index learned, giving the
// recorded page (CheckLearnedTerms refuses terms no search could have
// recorded); ForgetLearned drops everything, after which the ranking is the text's
// alone, as it is for an index that never learned.
//
// # Bodies
//
// With Options.Bodies, each candidate's body is a field of its text too,
// weighted 0.3 (b 0.75): a body names the tools, files and steps of a
// task, words a query shares with it more often than with the
// description, but many skills share them, so they count less. Only the
// body's first MaxBodyBytes (4 KiB, cut between runes) is indexed, and
// its terms come after the other fields' under Options.MaxSkillTerms.
// The bodies are read through the registry (the skill's provider, as a
// load reads it) at the first search of a registry view, that is once
// per change the providers announce, never per search; every body of the
// view is read again then, as a body may change alone. A body that
// cannot be read is indexed empty (BodyReads counts it); a search whose
// context ends while they are read fails, and the next one goes on from
// the bodies read so far.
// Each analysis is keyed by a hash of the body as well, so an unchanged
// body is not analysed again. Off, no skill has a term in the field:
// every score, and so every ranking, is what it was without the option.
// On the evaluation set (TestBodyQuality) bodies lift hit@5 from 0.655
// to 0.713 and the mean reciprocal rank from 0.542 to 0.605; with
// learned terms, from 0.825 to 0.871. Reading 10,000 bodies again costs
// tens of milliseconds per change (BenchmarkReindexOneChangeBodies and
// its Quick variant, from memory), and the view keeps its bodies as
// indexed (TestMemory).
//
// Terms related by co-occurrence in the skills' own text (a query word
// expanded by the words that share skills with it) were tried and made
// every measure lower; they are not used.
//
// A match is a candidate with a positive score, that is one matching at
// least one query word; Total counts them. Matches come in descending
// score, ties by name in byte order, from offset, at most limit of them.
// Scores are computed in a fixed order from the candidates' texts alone,
// so the same candidates and query give the same order on every call and
// every process. A query of stop words alone matches nothing.
//
// # Caching
//
// Nothing is built per search when nothing changed. The index keeps, with
// each registry view (providers.Registry.Derive), the view's candidates;
// the registry replaces a view exactly when a provider announces a
// change, so a search of an unchanged view costs the registry's check
// that its view is current, and the scoring. The postings of a set of
// candidates (the corpus: for each term, the skills holding it with the
// term's weight in each) are built once per distinct set of texts and
// shared by every view of that set (working directories with the same
// skills share one). Each skill's analysis (its terms, their frequency
// per field, the fields' lengths) is kept by its name, description,
// whenToUse and body: a change to one skill analyses that skill again, finds the
// others' analyses in the corpus built before (an unchanged skill's
// strings are the very strings it was built from), and builds the new
// set's postings from them, a few milliseconds for 10,000 skills. Terms
// are numbered by one dictionary, so the postings are arrays indexed by
// term and building them is a counting pass.
//
// # Bounds
//
// Options.MaxAnalyses (default 32,768) bounds the analyses kept, least
// recently used first out; Options.MaxCorpora (default 8) the corpora, by
// the same rule (a view whose corpus was dropped builds it again at its
// next search); Options.MaxTerms (default 262,144) the terms numbered,
// past which the index numbers anew and analyses each skill again as it
// is searched; one numbering holds at most twice that, past which the
// new words of the skills analysed are left out until the next one.
// Options.MaxSkillTerms (default 256) bounds a skill's distinct terms
// (its first ones, name first), and each field is analysed for its first
// 16 KiB; LeftOut counts the words the bounds left out. The candidates
// kept with a view share the view's own skills, so the registry's bound
// on views bounds them. At 10,000 skills
// the analyses, dictionary and one corpus take about 7 MiB (0.7 KB a
// skill; TestMemory logs it) and a search takes tens of microseconds.
//
// # Left to the caller
//
// The tool's argument rules (the query's length and characters, limit
// and offset ranges) and the result text are catalog.Search's, which
// Searcher(q) serves: the index bound to q's session. Search itself takes
// any text, treats a negative offset as 0, and returns no match, but the
// total, for a limit ≤ 0. The matches are the registry's summaries; the
// ResourceBase values they point to are shared and must not be modified.
//
// # Where the code lives
//
// index.go holds the API, the caches and the bounds; analyze.go turns
// text into terms (the stemmer and stop words are
// github.com/kljensen/snowball's English ones) and numbers them;
// corpus.go builds the postings and ranks; bodies.go reads the bodies.
// The LRUs are github.com/hashicorp/golang-lru/v2's simplelru, guarded by
// the index's mutex.
package search
