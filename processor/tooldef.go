package processor

import (
	"fmt"
	"regexp"
	"strings"

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

// serveDefinition registers the micro service answering requests on
// events.ToolDefinitionSubject: JSON, or msgpack when the request says
// Content-Type: application/msgpack. All instances share a queue group.
func (p *Processor) serveDefinition() (micro.Service, error) {
	def := Definition()
	asJSON, err := events.Encode(events.JSON, def)
	if err != nil {
		return nil, fmt.Errorf("encode tool definition: %w", err)
	}
	asMsgpack, err := events.Encode(events.Msgpack, def)
	if err != nil {
		return nil, fmt.Errorf("encode tool definition: %w", err)
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
	err = svc.AddEndpoint("tool-definition", micro.HandlerFunc(func(req micro.Request) {
		if !p.requestReply(req.Reply(), false) {
			return
		}
		p.m.definitionReq.Inc()
		body, ct := asJSON, events.ContentTypeJSON
		if req.Headers().Get(events.HeaderContentType) == events.ContentTypeMsgpack {
			body, ct = asMsgpack, events.ContentTypeMsgpack
		}
		if err := req.Respond(body, micro.WithHeaders(micro.Headers{events.HeaderContentType: []string{ct}})); err != nil {
			p.log.Warn("answer tool definition request", "err", err)
		}
	}), micro.WithEndpointSubject(events.ToolDefinitionSubject))
	if err != nil {
		svc.Stop()
		return nil, fmt.Errorf("add tool definition endpoint: %w", err)
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
