package supervise

import (
	"context"
	"errors"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// A front door made before its unit starts is told the tenant is not
// served, hears when the registry arrives, and then reads it.
func TestLate(t *testing.T) {
	ctx := context.Background()
	l := NewLate()
	if _, err := l.Snapshot(ctx, catalog.Query{}); !errors.Is(err, ErrNotServing) {
		t.Fatalf("Snapshot before: %v", err)
	}
	if _, err := l.Searcher(catalog.Query{}).Search(ctx, "x", 10, 0); !errors.Is(err, ErrNotServing) {
		t.Fatalf("Search before: %v", err)
	}
	chans, complete := l.Changes(catalog.Query{})
	if complete || len(chans) != 1 {
		t.Fatalf("Changes before: %d %v", len(chans), complete)
	}
	reg := providers.NewRegistry(nil)
	defer reg.Close()
	l.Set(reg, nil)
	select {
	case <-chans[0]:
	default:
		t.Fatal("the registry's arrival was not announced")
	}
	snap, err := l.Snapshot(ctx, catalog.Query{})
	if err != nil || !snap.Complete || len(snap.Skills) != 0 {
		t.Fatalf("Snapshot after: %+v %v", snap, err)
	}
	l.Set(reg, nil) // again: no second close
}
