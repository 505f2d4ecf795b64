package usage_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor/usage"
)

// TestFollowSearchLoads: the pairs a search index learns from, read from
// a real stream: a search followed by loads within the next steps
// teaches each skill once; a search again (answered or failed) replaces
// the pending one; a load long after, or in another session, teaches
// nothing; a search that found nothing then a load teaches too; and
// records written while following are read as they come.
func TestFollowSearchLoads(t *testing.T) {
	l := &searchLog{t: t, js: sessionStream(t)}
	l.search("s1", "deploy to the cluster", 1, "k8s-deploy")
	l.load("s1", "k8s-deploy")
	l.load("s1", "k8s-deploy") // once per search and skill
	l.load("s1", "helm-charts")
	l.load("s1", "too-late") // the fourth result after the search
	l.search("s2", "first try", 0)
	l.search("s2", "black friday traffic", 0) // a search again
	l.load("s2", "capacity-planning")
	l.search("s3", "bad then nothing", 1, "x")
	l.searchError("s3", events.CodeBadRequest)
	l.load("s3", "unrelated")
	l.load("s4", "no-search-before")

	var mu sync.Mutex
	var got []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- usage.FollowSearchLoads(ctx, l.js, usage.FollowOptions{Stream: "SESSIONS", Prefix: "ev"}, func(p usage.SearchLoad) {
			mu.Lock()
			defer mu.Unlock()
			if p.At.IsZero() {
				t.Errorf("pair %+v without its instant", p)
			}
			got = append(got, fmt.Sprintf("%s %q %s", p.Session, p.Query, p.Skill))
		})
	}()
	want := []string{
		`s1 "deploy to the cluster" k8s-deploy`,
		`s1 "deploy to the cluster" helm-charts`,
		`s2 "black friday traffic" capacity-planning`,
	}
	check := func(want []string) func() error {
		return func() error {
			mu.Lock()
			defer mu.Unlock()
			if !reflect.DeepEqual(got, want) {
				return fmt.Errorf("pairs %q; want %q", got, want)
			}
			return nil
		}
	}
	natstest.Eventually(t, 20*time.Second, "the pairs written before", check(want))
	l.search("s5", "written while following", 1, "later-skill")
	l.load("s5", "later-skill")
	want = append(want, `s5 "written while following" later-skill`)
	natstest.Eventually(t, 20*time.Second, "the pairs written while following", check(want))
	cancel()
	if err := <-done; err != nil {
		t.Errorf("follow ended with %v; want nil when its context ends", err)
	}
}

// TestFollowSearchLoadsBad: a stream that does not exist and a bad
// prefix are errors naming them, not a stall.
func TestFollowSearchLoadsBad(t *testing.T) {
	js := sessionStream(t)
	ctx := context.Background()
	if err := usage.FollowSearchLoads(ctx, js, usage.FollowOptions{Stream: "NOPE", Prefix: "ev"}, func(usage.SearchLoad) {}); err == nil {
		t.Error("following a stream that does not exist: no error")
	}
	if err := usage.FollowSearchLoads(ctx, js, usage.FollowOptions{Stream: "SESSIONS", Prefix: "bad prefix"}, func(usage.SearchLoad) {}); err == nil {
		t.Error("a bad prefix: no error")
	}
}
