package processor

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillstream/skillstream/events"
)

// Members lists every serving processor once, in byte order, and skips
// answers to the same request that are garbage or name no valid instance.
func TestMembers(t *testing.T) {
	e := newEnv(t)
	e.start(func(c *Config, _ *options) { c.Instance = "member-b" })
	e.start(func(c *Config, _ *options) { c.Instance = "member-a" })

	nc := e.srv.Connect()
	subject, err := micro.ControlSubject(micro.InfoVerb, ServiceName, "")
	if err != nil {
		t.Fatal(err)
	}
	hostile, _ := json.Marshal(micro.Info{Endpoints: []micro.EndpointInfo{
		{Subject: events.ViewSubjectPrefix + ".bad.instance"},
		{Subject: events.ViewSubjectPrefix + "."},
		{Subject: "elsewhere.member-c"},
	}})
	for _, body := range [][]byte{[]byte("{not json"), hostile} {
		sub, err := nc.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond(body) })
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	ask := e.srv.Connect()
	got, err := Members(context.Background(), ask, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"member-a", "member-b"}; !slices.Equal(got, want) {
		t.Fatalf("members %q, want %q", got, want)
	}
}

// Nobody serving is an empty list, not an error.
func TestMembersNone(t *testing.T) {
	e := newEnv(t)
	got, err := Members(context.Background(), e.srv.Connect(), 100*time.Millisecond)
	if err != nil || len(got) != 0 {
		t.Fatalf("members %q, err %v; want none", got, err)
	}
}
