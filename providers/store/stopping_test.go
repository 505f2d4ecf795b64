package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/store"
)

// A provider whose connection is closed on purpose (a serve stopping)
// answers with an incomplete snapshot, as for any failure, but its error
// says the process is stopping, and the registry warns of nothing; one
// whose connection breaks otherwise is still warned about (the store
// tests of a server going away).
func TestConnectionClosedOnPurposeIsNoWarning(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	pb := publisher(t, srv.JS, store.Config{})
	push(t, pb, skillstore.Global, false, writeSkill(t, t.TempDir(), "a-skill", "A.", "Body A.", nil))
	nc := srv.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuilder
	p := open(t, js, store.Config{Logger: newLogger(&logs)})
	reg := providers.NewRegistry([]providers.Provider{p}, providers.WithLogger(newLogger(&logs)))
	defer reg.Close()
	if s, err := reg.Snapshot(ctx, catalog.Query{}); err != nil || !s.Complete || len(s.Skills) != 1 {
		t.Fatalf("before: %+v, %v", s, err)
	}
	nc.Close()
	natstest.Eventually(t, 10*time.Second, "the provider to see its connection closed", func() error {
		_, err := p.List(ctx, catalog.Query{})
		if !errors.Is(err, providers.ErrStopping) || !errors.Is(err, store.ErrUnavailable) {
			return errors.New("List error: " + errString(err))
		}
		return nil
	})
	if s, err := reg.Snapshot(ctx, catalog.At(t.TempDir())); err != nil || s.Complete {
		t.Errorf("after: complete %v, %v; want an incomplete snapshot", s.Complete, err)
	}
	if out := logs.String(); strings.Contains(out, "level=WARN") {
		t.Errorf("warned about a connection closed on purpose:\n%s", out)
	}
}

func errString(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}
