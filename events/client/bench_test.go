package client

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
)

// BenchmarkPreStep measures what the client adds to one pre-step over a
// bare, hand-written worker doing the same wire work: encode the pre-step,
// publish it to JetStream with Content-Type, Reply-Inbox and Nats-Msg-Id,
// wait for the answer on an inbox, decode the Decision (and the client:
// check that it answers one of its publications). A responder on the same
// server answers every pre-step at once with an unchanged Decision, so
// that the figures are the worker side's and the server's only.
//
//	go test ./events/client -run XXX -bench PreStep -count 6
func BenchmarkPreStep(b *testing.B) {
	srv := natstest.Start(b)
	ctx := context.Background()
	if _, err := srv.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name: "SESSIONS", Subjects: []string{"ev.>"}, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute,
	}); err != nil {
		b.Fatal(err)
	}
	// The responder reads the stream (it needs each trigger's sequence,
	// which the client checks) and answers with the trigger's session,
	// step and sequence.
	rc := srv.Connect()
	oc, err := srv.JS.OrderedConsumer(ctx, "SESSIONS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"ev.*.agent.pre-step"}})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := oc.Consume(func(m jetstream.Msg) {
		ps, err := events.DecodePreStep(events.Msgpack, m.Data())
		if err != nil {
			b.Error(err)
			return
		}
		md, err := m.Metadata()
		if err != nil {
			b.Error(err)
			return
		}
		answer, err := events.Encode(events.Msgpack, events.Decision{V: 1, Session: ps.Session, Step: ps.Step,
			TriggerSeq: md.Sequence.Stream, Outcome: events.OutcomeUnchanged})
		if err != nil {
			b.Error(err)
			return
		}
		_ = rc.PublishMsg(&nats.Msg{Subject: m.Headers().Get(events.HeaderReplyInbox),
			Header: nats.Header{events.HeaderContentType: []string{events.ContentTypeMsgpack}}, Data: answer})
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	tools := []events.Tool{{Name: "bash", Owner: "agent"}, SkillTool("skillstream")}

	b.Run("bare", func(b *testing.B) {
		nc := srv.Connect()
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		inbox := nc.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			step := strconv.Itoa(i)
			data, err := events.Encode(events.Msgpack, events.PreStep{V: 1, Session: "bare", Step: step, Tools: tools})
			if err != nil {
				b.Fatal(err)
			}
			m := &nats.Msg{Subject: "ev.bare.agent.pre-step", Data: data, Header: nats.Header{
				events.HeaderContentType: []string{events.ContentTypeMsgpack},
				events.HeaderReplyInbox:  []string{inbox},
				events.HeaderMsgID:       []string{"bare:" + step + ":1"},
			}}
			if _, err := js.PublishMsgAsync(m); err != nil {
				b.Fatal(err)
			}
			r, err := sub.NextMsg(10 * time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := events.DecodeDecision(events.Msgpack, r.Data); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("client", func(b *testing.B) {
		c, err := New(srv.Connect())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, err := c.PreStep(ctx, events.PreStep{Session: "client", Step: strconv.Itoa(i), Tools: tools}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
