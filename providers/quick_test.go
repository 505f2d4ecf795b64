package providers_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// quick is a fake that can answer some loads from memory.
type quick struct {
	*fake
	known  map[string]bool // names LoadQuick answers
	quicks atomic.Int64
}

func (q *quick) LoadQuick(name string, _ catalog.Query) (catalog.Skill, bool) {
	q.quicks.Add(1)
	if !q.known[name] {
		return catalog.Skill{}, false
	}
	return catalog.Skill{Summary: catalog.Summary{Name: name}, Content: "quick body of " + name}, true
}

// The registry takes a QuickLoader's answer without a supervised Load,
// names the provider on it, checks its name, and loads as usual when the
// provider cannot answer at once or the caller's context is done.
func TestRegistryQuickLoad(t *testing.T) {
	p := &quick{fake: &fake{name: "q"}, known: map[string]bool{"a-skill": true}}
	p.set(cand("a-skill", "A.", "src", 1), cand("b-skill", "B.", "src", 1))
	r := providers.NewRegistry([]providers.Provider{p})
	defer r.Close()
	ctx := context.Background()

	sk, err := r.Load(ctx, "a-skill", catalog.Query{})
	if err != nil || sk.Content != "quick body of a-skill" || sk.Provider != "q" || p.loads.Load() != 0 {
		t.Fatalf("quick load = %+v, %v (loads %d)", sk, err, p.loads.Load())
	}
	sk, err = r.Load(ctx, "b-skill", catalog.Query{})
	if err != nil || sk.Content != "body of b-skill from q" || p.loads.Load() != 1 {
		t.Fatalf("load the provider cannot answer at once = %+v, %v (loads %d)", sk, err, p.loads.Load())
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	before := p.quicks.Load()
	if _, err := r.Load(cancelled, "a-skill", catalog.Query{}); err == nil || p.quicks.Load() != before {
		t.Fatalf("load under a cancelled context: %v, quick loads %d -> %d", err, before, p.quicks.Load())
	}
}
