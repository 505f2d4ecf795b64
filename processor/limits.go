package processor

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// errTooLarge reports an output that cannot be encoded within the largest
// message the stream takes. It is permanent: the same trigger would give the
// same output again, so it is answered at once and never retried.
var errTooLarge = errors.New("output too large for one message")

// envelopeAllowance is what the worst-case estimates below reserve for all
// of an output but its catalog list or skill instructions: headers, session
// and step or call ids, skill name, provider, resource guidance, field names.
const envelopeAllowance = 16 << 10

// truncationNoticeMax bounds the length of the notice catalog.Truncate
// appends to cut instructions.
const truncationNoticeMax = 128

// catalogBytesPerCodePoint bounds the msgpack bytes a catalog message takes
// per code point of its list text: the text itself (at most 4 bytes a code
// point), the same names and descriptions again in source.entries (at most
// 4 more), and the per-entry fields and headers of source.entries (an entry
// line takes at least 6 code points, its fields about 25 bytes).
const catalogBytesPerCodePoint = 13

// messageLimit is the largest message, headers included, an output may
// take: the smallest of the codec's limit, the server's maximum payload and
// the stream's maximum message size (when it has one).
type messageLimit struct {
	max    int
	server int // 0: not known
	stream int // 0: unlimited
}

func newMessageLimit(serverMax int64, streamMax int32) messageLimit {
	l := messageLimit{max: events.MaxPayloadSize}
	if serverMax > 0 {
		l.server = int(min(serverMax, 1<<40))
		l.max = min(l.max, l.server)
	}
	if streamMax > 0 {
		l.stream = int(streamMax)
		l.max = min(l.max, l.stream)
	}
	return l
}

// String names the limit and where it comes from, for error messages.
func (l messageLimit) String() string {
	stream := "unlimited"
	if l.stream > 0 {
		stream = strconv.Itoa(l.stream)
	}
	server := "unknown"
	if l.server > 0 {
		server = strconv.Itoa(l.server)
	}
	return fmt.Sprintf("%d bytes (the smallest of: skillstream's payload limit %d, the server's max payload %s, the stream's max message size %s)",
		l.max, events.MaxPayloadSize, server, stream)
}

// worstCatalog is the largest catalog message a catalog size limit allows.
func worstCatalog(maxLength int) int {
	return catalogBytesPerCodePoint*maxLength + envelopeAllowance
}

// worstResult is the largest skill tool result an instruction size limit
// allows: the content is carried once (value.content is left out when it
// would not fit twice).
func worstResult(maxSkillBytes int) int {
	return maxSkillBytes + truncationNoticeMax + envelopeAllowance
}

// checkLimits refuses size limits that would let an output exceed the
// message limit l. A limit of 0 (none) is not refused: outputs over the
// message limit are then answered with a too_large error.
func checkLimits(opts catalog.Options, l messageLimit) error {
	if n := opts.MaxLength; n > 0 && worstCatalog(n) > l.max {
		return fmt.Errorf("%w: catalog max length %d allows catalog messages of up to %d bytes, more than one message may hold: %v; use a catalog max length of at most %d",
			ErrInvalidConfig, n, worstCatalog(n), l, max(0, (l.max-envelopeAllowance)/catalogBytesPerCodePoint))
	}
	if n := opts.MaxSkillBytes; n > 0 && worstResult(n) > l.max {
		return fmt.Errorf("%w: max skill bytes %d allows skill tool results of up to %d bytes, more than one message may hold: %v; use a max skill bytes of at most %d",
			ErrInvalidConfig, n, worstResult(n), l, max(0, l.max-envelopeAllowance-truncationNoticeMax))
	}
	return nil
}

// headerSize is the size of h on the wire, as the server counts it toward
// its limits.
func headerSize(h nats.Header) int {
	n := len("NATS/1.0\r\n\r\n")
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(": ") + len(v) + len("\r\n")
		}
	}
	return n
}

// fits reports whether data with headers h is within the message limit.
func (p *Processor) fits(h nats.Header, data []byte) error {
	if n := headerSize(h) + len(data); n > p.limit.max {
		return fmt.Errorf("%w: %d bytes, limit %v", errTooLarge, n, p.limit)
	}
	return nil
}

// fitResult makes a tool result fit in one message: value.content is left
// out when the result would not fit with it (the content stays in the
// text), and a result that does not fit even then becomes a too_large
// error result. The text is never shortened here: cutting instructions is
// the instruction size limit's business, and its notice tells the model.
func (p *Processor) fitResult(t *trigger, r events.ToolResult) events.ToolResult {
	if r.Value == nil || len(r.Text)+len(r.Value.Content)+envelopeAllowance <= p.limit.max {
		return r
	}
	size := func(r events.ToolResult) int {
		b, err := events.Encode(events.Msgpack, r)
		if err != nil {
			return events.MaxPayloadSize + 1
		}
		return len(b) + envelopeAllowance/4
	}
	if size(r) <= p.limit.max {
		return r
	}
	v := *r.Value
	v.Content = ""
	r.Value = &v
	n := size(r)
	if n <= p.limit.max {
		return r
	}
	p.m.tooLarge.WithLabelValues(t.handler.label()).Inc()
	p.log.Error("skill tool result too large for one message; answered with a too_large error", "session", t.sid,
		"call", t.ref, "skill", v.Name, "bytes", n, "limit", p.limit.max)
	return p.toolError(t, events.CodeTooLarge, fmt.Sprintf("skill %q is too large to deliver: its result takes about %d bytes, more than the %d bytes one message may hold",
		v.Name, n, p.limit.max))
}

// shrinkReply returns a smaller answer than v for a reply that did not fit
// in one message (a JSON encoding can be several times larger than the
// msgpack one that was appended): a tool result without value.content,
// else a too_large error; a decision without its catalog, with a too_large
// error saying the catalog is in the session log. ok is false when there is
// nothing to shrink.
func shrinkReply(v any, cause error) (any, bool) {
	switch r := v.(type) {
	case events.ToolResult:
		if r.Value != nil && r.Value.Content != "" {
			val := *r.Value
			val.Content = ""
			r.Value = &val
			return r, true
		}
		if r.Error != nil && r.Error.Code == events.CodeTooLarge {
			return nil, false
		}
		msg := "the result is too large for a reply (" + cause.Error() + "); it is in the session log"
		return events.ToolResult{V: r.V, Session: r.Session, Call: r.Call, TriggerSeq: r.TriggerSeq, IsError: true,
			Text: "Error: " + msg, Error: &events.ErrorInfo{Code: events.CodeTooLarge, Message: msg}}, true
	case *events.ToolResult:
		return shrinkReply(*r, cause)
	case events.Decision:
		if shrinkInvocations(&r) {
			return r, true
		}
		if r.Catalog == nil && len(r.Invocations) > 0 {
			r.Invocations = nil
			r.Error = &events.ErrorInfo{Code: events.CodeTooLarge, Message: "the invocations are too large for a reply (" + cause.Error() + "); they are in the session log"}
			return r, true
		}
		if r.Catalog == nil {
			return nil, false
		}
		r.Catalog = nil
		r.Error = &events.ErrorInfo{Code: events.CodeTooLarge, Message: "the catalog is too large for a reply (" + cause.Error() + "); it is in the session log"}
		return r, true
	}
	return nil, false
}

// shrinkInvocations leaves value.content out of a decision's invocations
// (their text holds it) and reports whether there was any to leave out.
func shrinkInvocations(d *events.Decision) bool {
	shrunk := false
	for i := range d.Invocations {
		if d.Invocations[i].Value.Content != "" {
			if !shrunk {
				d.Invocations = append([]events.SkillInvocation(nil), d.Invocations...)
			}
			d.Invocations[i].Value.Content = ""
			shrunk = true
		}
	}
	return shrunk
}
