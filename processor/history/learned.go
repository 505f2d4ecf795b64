package history

import (
	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// WireLearnedTerms is the learned terms a search ranked with, as its
// result records them (nil for none).
func WireLearnedTerms(ev []catalog.LearnedTerm) []events.LearnedTerm {
	if len(ev) == 0 {
		return nil
	}
	out := make([]events.LearnedTerm, len(ev))
	for i, lt := range ev {
		ws := make([]events.LearnedWeight, len(lt.Skills))
		for j, w := range lt.Skills {
			ws[j] = events.LearnedWeight{Name: w.Name, Weight: w.Weight}
		}
		out[i] = events.LearnedTerm{Term: lt.Term, Skills: ws}
	}
	return out
}

// LearnedTermsOf is the learned terms a search's result recorded, as the
// search index takes them (nil for none). They are not checked: the index
// does (search.CheckLearnedTerms).
func LearnedTermsOf(ev []events.LearnedTerm) []catalog.LearnedTerm {
	if len(ev) == 0 {
		return nil
	}
	out := make([]catalog.LearnedTerm, len(ev))
	for i, lt := range ev {
		ws := make([]catalog.LearnedWeight, len(lt.Skills))
		for j, w := range lt.Skills {
			ws[j] = catalog.LearnedWeight{Name: w.Name, Weight: w.Weight}
		}
		out[i] = catalog.LearnedTerm{Term: lt.Term, Skills: ws}
	}
	return out
}
