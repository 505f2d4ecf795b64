package processor

import (
	"context"
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// ServiceName is the NATS micro service name under which the skill tool
// definition is served (nats micro ls lists it).
const ServiceName = "skillstream"

// ProtocolVersion is the wire protocol version, in the micro service's
// metadata.
const ProtocolVersion = "1"

// serviceVersion is the micro service version for a binary version: the
// version without its leading "v" when it is a semantic version (module
// versions and pseudo-versions are), else 0.0.0-devel (a build outside a
// module version, such as go run or a test binary).
func serviceVersion(v string) string {
	v = strings.TrimPrefix(v, "v")
	if semver.MatchString(v) {
		return v
	}
	return "0.0.0-devel"
}

// semver is the form micro requires of a service version.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// Definition is the skill tool definition as served on the wire.
func Definition() events.ToolDefinition {
	return events.ToolDefinition{
		Name:        catalog.ToolName,
		Description: catalog.ToolDescription,
		Parameters:  events.RawJSON(catalog.ToolParameters),
	}
}

// SearchDefinition is the skill_search tool definition as served on the
// wire.
func SearchDefinition() events.ToolDefinition {
	return events.ToolDefinition{
		Name:        catalog.SearchToolName,
		Description: catalog.SearchToolDescription,
		Parameters:  events.RawJSON(catalog.SearchToolParameters),
	}
}

// Definitions are the definitions of every tool a processor with the
// catalog options opts serves, in the order a worker registers them: the
// skill tool, and the skill_search tool when opts.SkillSearch is on.
func Definitions(opts catalog.Options) []events.ToolDefinition {
	defs := []events.ToolDefinition{Definition()}
	if opts.SkillSearch {
		defs = append(defs, SearchDefinition())
	}
	return defs
}

// encodedAnswer is an answer to a definition request in both encodings.
type encodedAnswer struct{ json, msgpack []byte }

func encodeAnswer(v any) (encodedAnswer, error) {
	j, err := events.Encode(events.JSON, v)
	if err != nil {
		return encodedAnswer{}, err
	}
	m, err := events.Encode(events.Msgpack, v)
	return encodedAnswer{json: j, msgpack: m}, err
}

// definitionHandler answers a definition request with a: JSON, or msgpack
// when the request says Content-Type: application/msgpack; only on reply
// subjects a request may be answered on (requestReply).
func (p *Processor) definitionHandler(a encodedAnswer) micro.HandlerFunc {
	return func(req micro.Request) {
		if !p.requestReply(req.Reply(), false) {
			return
		}
		if !p.probing(req.Reply()) {
			p.m.definitionReq.Inc()
		}
		body, ct := a.json, events.ContentTypeJSON
		if req.Headers().Get(events.HeaderContentType) == events.ContentTypeMsgpack {
			body, ct = a.msgpack, events.ContentTypeMsgpack
		}
		if err := req.Respond(body, micro.WithHeaders(micro.Headers{events.HeaderContentType: []string{ct}})); err != nil {
			p.log.Warn("answer tool definition request", "err", err)
		}
	}
}

// serveDefinition registers the micro service answering requests on
// events.ToolDefinitionSubject (the skill tool) and
// events.ToolDefinitionsSubject (every tool served, see Definitions). All
// instances share a queue group.
func (p *Processor) serveDefinition() (micro.Service, error) {
	one, err := encodeAnswer(Definition())
	if err != nil {
		return nil, fmt.Errorf("encode tool definition: %w", err)
	}
	all, err := encodeAnswer(Definitions(p.cfg.Catalog))
	if err != nil {
		return nil, fmt.Errorf("encode tool definitions: %w", err)
	}
	svc, err := micro.AddService(p.nc, micro.Config{
		Name:        ServiceName,
		Version:     serviceVersion(p.version),
		Description: "skill catalog and skill tool for LLM agents",
		Metadata: map[string]string{"stream": p.cfg.Stream, "prefix": p.cfg.Prefix, "owner": p.cfg.ToolOwner,
			"protocol": ProtocolVersion, "build": p.version, "instance": p.cfg.Instance,
			"consumer": p.cfg.Consumer, "store": p.store()},
	})
	if err != nil {
		return nil, fmt.Errorf("add micro service %s: %w", ServiceName, err)
	}
	err = svc.AddEndpoint("tool-definition", p.definitionHandler(one), micro.WithEndpointSubject(events.ToolDefinitionSubject))
	if err != nil {
		svc.Stop()
		return nil, fmt.Errorf("add tool definition endpoint: %w", err)
	}
	err = svc.AddEndpoint("tool-definitions", p.definitionHandler(all), micro.WithEndpointSubject(events.ToolDefinitionsSubject))
	if err != nil {
		svc.Stop()
		return nil, fmt.Errorf("add tool definitions endpoint: %w", err)
	}
	if err := p.serveView(svc); err != nil {
		svc.Stop()
		return nil, fmt.Errorf("add view endpoint: %w", err)
	}
	// Make sure the server knows the subscriptions before anyone is told
	// the processor is ready.
	if err := p.nc.FlushTimeout(p.cfg.RequestTimeout); err != nil {
		svc.Stop()
		return nil, fmt.Errorf("register micro service %s: %w", ServiceName, err)
	}
	return svc, nil
}

// start brings the processor to serving (see Run): it waits until the
// pull loop's first pull request was sent and has the server confirm it
// (a flush), registers the micro service, and asks each endpoint once
// through the server. pulled is closed when the pull loop ended.
func (p *Processor) start(ctx context.Context, pulling, pulled <-chan struct{}) (micro.Service, error) {
	select {
	case <-pulling:
	case <-pulled:
		return nil, fmt.Errorf("consumer %s: the pull loop ended before it pulled: %w", p.cfg.Consumer, context.Cause(ctx))
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	fctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	err := p.nc.FlushWithContext(fctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("consumer %s: first pull request: %w", p.cfg.Consumer, err)
	}
	svc, err := p.serveDefinition()
	if err != nil {
		return nil, err
	}
	if err := p.selfCheck(ctx); err != nil {
		svc.Stop()
		return nil, err
	}
	return svc, nil
}

// selfCheckRetry is the pause between two self-check requests that found
// no responder.
const selfCheckRetry = 50 * time.Millisecond

// selfCheck sends each endpoint of the micro service a request through
// the server, on the processor's own connection, and returns once each has
// answered, within 4 × Config.RequestTimeout. The requests' reply subjects
// are under an inbox of the processor's connection that is answered only
// while the check runs (probing): a worker cannot name it, and it is not
// counted as a tool definition request. The view endpoint is sent an empty
// request, which it answers with an error at once.
func (p *Processor) selfCheck(ctx context.Context) error {
	inbox := p.nc.NewInbox()
	if p.cfg.InboxPrefix != "" {
		// Under the members' probe prefix, which every member answers:
		// the service's queue group may hand the request to another one.
		inbox = p.probePrefix() + "." + rand.Text()
	}
	sub, err := p.nc.SubscribeSync(inbox + ".*")
	if err != nil {
		return fmt.Errorf("self-check inbox: %w", err)
	}
	defer sub.Unsubscribe()
	p.probe.Store(&inbox)
	defer p.probe.Store(nil)
	ctx, cancel := context.WithTimeout(ctx, 4*p.cfg.RequestTimeout)
	defer cancel()
	for i, subject := range []string{events.ToolDefinitionSubject, events.ToolDefinitionsSubject, events.ViewSubject(p.cfg.Instance)} {
		if err := p.ask(ctx, sub, fmt.Sprintf("%s.%d", inbox, i), subject); err != nil {
			return fmt.Errorf("%s does not answer a request of the processor's own: %w", subject, err)
		}
	}
	return nil
}

// ask requests subject with reply subject reply (read on sub) until it is
// answered; a "no responders" status, or no answer within
// Config.RequestTimeout, is asked again.
func (p *Processor) ask(ctx context.Context, sub *nats.Subscription, reply, subject string) error {
	for {
		if err := p.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply}); err != nil {
			return err
		}
		why := p.answered(ctx, sub, reply)
		if why == "" {
			return nil
		}
		if err := pause(ctx, selfCheckRetry); err != nil {
			return fmt.Errorf("%s (%w)", why, err)
		}
	}
}

// answered waits, at most Config.RequestTimeout, for the answer on reply:
// "" when it came, else why not.
func (p *Processor) answered(ctx context.Context, sub *nats.Subscription, reply string) string {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	for {
		m, err := sub.NextMsgWithContext(ctx)
		switch {
		case err != nil:
			return fmt.Sprintf("no answer within %v", p.cfg.RequestTimeout)
		case m.Subject != reply:
			// a late answer to an earlier subject
		case m.Header.Get("Status") != "":
			return "no responders"
		default:
			return ""
		}
	}
}

// probing reports whether reply is the reply subject of a self-check's
// request: this member's, or, under the probe prefix of the processors'
// inboxes, another member's (the queue group hands a member's self-check
// to any member). Nothing but self-checks listens under that prefix, so an
// answer sent there reaches no consumer or request of a processor.
func (p *Processor) probing(reply string) bool {
	if !validInbox(reply) {
		return false
	}
	if p.cfg.InboxPrefix != "" && under(reply, p.probePrefix()) && strings.Count(reply[len(p.probePrefix()):], ".") == 2 {
		return true
	}
	prefix := p.probe.Load()
	return prefix != nil && under(reply, *prefix) && reply != *prefix
}

// probePrefix is where members' self-checks are answered, below the
// processors' inbox prefix.
func (p *Processor) probePrefix() string { return p.cfg.InboxPrefix + ".probe" }
