package events

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// listBytes is the msgpack array of n entries of one project.
func listBytes(t *testing.T, project, n int) []byte {
	t.Helper()
	es := make([]Entry, n)
	for i := range es {
		es[i] = Entry{Name: fmt.Sprintf("p%d-skill-%04d", project, i), Description: strings.Repeat("does a thing. ", 4)}
	}
	b, err := msgpack.Marshal(es)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A worker in ten projects is sent ten lists over and over: once each is
// decoded, every later one is a hit (a count of eight, emptied when full,
// missed nearly all of them).
func TestKnownListsHoldAWorkersProjects(t *testing.T) {
	c := listCache{budget: knownListsBudget}
	lists := make([][]byte, 10)
	for p := range lists {
		lists[p] = listBytes(t, p, 200)
	}
	decodes := 0
	for round := range 5 {
		for p, b := range lists {
			es, end, hit := c.get(b, 0)
			if hit {
				if end != len(b) || len(es) != 200 || es[7].Name != fmt.Sprintf("p%d-skill-0007", p) {
					t.Fatalf("round %d project %d: hit gave %d entries ending at %d", round, p, len(es), end)
				}
				continue
			}
			decodes++
			r := plain{b: b}
			var got []Entry
			if !r.entries(&got) {
				t.Fatalf("project %d: list not read", p)
			}
			c.put(b, got)
		}
	}
	if decodes != len(lists) {
		t.Fatalf("decoded %d lists in 5 rounds of %d projects, want each once", decodes, len(lists))
	}
}

// Past its budget the cache gives up the list used longest ago, not the
// one just used, and never keeps a list larger than the budget.
func TestKnownListsBudgetEvictsLeastRecentlyUsed(t *testing.T) {
	a, b, d := listBytes(t, 1, 100), listBytes(t, 2, 100), listBytes(t, 3, 100)
	c := listCache{budget: listCost(len(a)) + listCost(len(b)) + listCost(len(d)) - 1} // two fit, not three
	c.put(a, []Entry{{Name: "a"}})
	c.put(b, []Entry{{Name: "b"}})
	if _, _, hit := c.get(a, 0); !hit { // a is now the most recent
		t.Fatal("a not kept")
	}
	c.put(d, []Entry{{Name: "d"}})
	if _, _, hit := c.get(b, 0); hit {
		t.Error("b, used longest ago, kept past the budget")
	}
	for name, raw := range map[string][]byte{"a": a, "d": d} {
		if es, _, hit := c.get(raw, 0); !hit || es[0].Name != name {
			t.Errorf("%s: hit %v, entries %v", name, hit, es)
		}
	}
	if c.size > c.budget {
		t.Errorf("size %d over budget %d", c.size, c.budget)
	}

	small := listCache{budget: listCost(len(a)) - 1}
	small.put(a, []Entry{{Name: "a"}})
	if _, _, hit := small.get(a, 0); hit || small.size != 0 {
		t.Errorf("a list larger than the budget was kept (size %d)", small.size)
	}
}
