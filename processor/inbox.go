package processor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skillstream/skillstream/events"
)

// DefaultReplyPrefix is where answers may go by default: the inboxes NATS
// clients create (nats.go's NewInbox, request/reply).
const DefaultReplyPrefix = "_INBOX"

// DefaultInboxPrefix is the inbox prefix serve gives its processor's
// connection: apart from nats.go's default "_INBOX" that workers' inboxes
// use, so that a deployment can let workers subscribe under _INBOX.<worker>
// and no worker under it.
const DefaultInboxPrefix = "_SKILLSTREAM_INBOX"

// errInbox is wrapped by every refusal of a Reply-Inbox.
var errInbox = errors.New("reply inbox not allowed")

// serviceToken is the first token of the service's own subjects (the tool
// definition request subject).
var serviceToken, _, _ = strings.Cut(events.ToolDefinitionSubject, ".")

// The processor publishes its answers with its own NATS rights, which are
// wider than a worker's: it appends to every session. A worker must not be
// able to make it publish where the worker itself may not, so an answer
// only goes to a subject under one of Config.ReplyPrefixes, and never to
// the session stream, to the server's and JetStream's API subjects
// ($JS., $KV., $O., $SYS. and everything else starting with '$') or to the
// service's own subjects, whatever the prefixes say.

// checkInbox returns nil when subject may receive an answer, else an error
// wrapping errInbox that says why.
func (c Config) checkInbox(subject string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %q %s", errInbox, truncate(subject, 200), why)
	}
	if !validInbox(subject) {
		return bad("is not a subject to publish to (wildcard, empty token, space or control character, or longer than 1024 bytes)")
	}
	if why := c.reserved(subject); why != "" {
		return bad(why)
	}
	for _, p := range c.ReplyPrefixes {
		if under(subject, p) {
			return nil
		}
	}
	return bad(fmt.Sprintf("is not under a reply prefix (%s)", strings.Join(c.ReplyPrefixes, ", ")))
}

// checkTriggerInbox is checkInbox for the Reply-Inbox of a trigger of
// session sid: in the owner layout, unless AnyOwnerInbox, subject must
// also lie under <reply prefix>.<owner>. for the session's owner, so that
// answers go only where that owner's worker may read (the server binds
// the owner token of a trigger's subject to the worker publishing it; the
// processor cannot tell the publisher of a stored trigger otherwise).
func (c Config) checkTriggerInbox(subject, sid string) error {
	if err := c.checkInbox(subject); err != nil {
		return err
	}
	if c.Layout != events.LayoutOwner || c.AnyOwnerInbox {
		return nil
	}
	owner, _, _ := strings.Cut(sid, ".")
	own := make([]string, len(c.ReplyPrefixes))
	for i, p := range c.ReplyPrefixes {
		own[i] = p + "." + owner + "."
		if events.ValidSession(owner) && strings.HasPrefix(subject, own[i]) {
			return nil
		}
	}
	return fmt.Errorf("%w: %q is not an inbox of the session's owner %q (under %s): answers go only to the owner's inboxes in the owner layout",
		errInbox, truncate(subject, 200), truncate(owner, 200), strings.Join(own, ", "))
}

// reserved says why answers may never be published on subject (or on any
// subject under it), or "" when nothing forbids it.
func (c Config) reserved(subject string) string {
	switch {
	case strings.HasPrefix(subject, "$"):
		return "is a server or JetStream API subject"
	case under(subject, c.Prefix) || under(c.Prefix, subject):
		return fmt.Sprintf("overlaps the session stream's subjects %s.>", c.Prefix)
	case under(subject, serviceToken) || under(serviceToken, subject):
		return fmt.Sprintf("overlaps the service's own subjects %s.>", serviceToken)
	case c.InboxPrefix != "" && (under(subject, c.InboxPrefix) || under(c.InboxPrefix, subject)):
		return fmt.Sprintf("overlaps the processor's own inboxes %s.>", c.InboxPrefix)
	}
	return ""
}

// validateInboxPrefix checks c.InboxPrefix: a literal subject prefix,
// none of the subjects answers never go to, and apart from every reply
// prefix (neither under the other).
func (c Config) validateInboxPrefix() error {
	p := c.InboxPrefix
	if p == "" {
		return nil
	}
	if !validInbox(p) {
		return fmt.Errorf("inbox prefix %q: want a literal subject prefix such as %s (no wildcards, no empty tokens)", p, DefaultInboxPrefix)
	}
	if why := (Config{Prefix: c.Prefix}).reserved(p); why != "" {
		return fmt.Errorf("inbox prefix %q %s", p, why)
	}
	for _, r := range c.ReplyPrefixes {
		if under(p, r) || under(r, p) {
			return fmt.Errorf("inbox prefix %q overlaps reply prefix %q: a worker could have answers published into the processor's own inboxes; give the processor an inbox prefix apart from the workers'", p, r)
		}
	}
	return nil
}

// under reports whether subject is prefix itself or below it, token-wise:
// "a.b" is under "a", "ab" is not.
func under(subject, prefix string) bool {
	return subject == prefix || (len(subject) > len(prefix) && subject[len(prefix)] == '.' && strings.HasPrefix(subject, prefix))
}

// normalPrefix is a reply prefix without its trailing dot, as it is
// stored: "_INBOX." and "_INBOX" are the same prefix.
func normalPrefix(p string) string { return strings.TrimSuffix(p, ".") }

// validateReplyPrefixes checks c.ReplyPrefixes (normalised).
func (c Config) validateReplyPrefixes() error {
	for _, p := range c.ReplyPrefixes {
		if !validInbox(p) {
			return fmt.Errorf("reply prefix %q: want a literal subject prefix such as %s. (no wildcards, no empty tokens)", p, DefaultReplyPrefix)
		}
		if why := c.reserved(p); why != "" {
			return fmt.Errorf("reply prefix %q %s", p, why)
		}
	}
	return nil
}

// validInbox reports whether s is a literal subject one can publish to,
// of at most 1024 bytes.
func validInbox(s string) bool { return len(s) <= 1024 && events.LiteralSubject(s) }

// truncate shortens a worker's string for a message or a log: at most n
// bytes of it (cut at a character boundary), followed by its length, so
// that no log line grows with what a worker sends.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// responsePrefix is where a server puts the reply subject of a request
// that reached this account through a service import: the server maps
// the answer back to the requester's own account.
const responsePrefix = "_R_"

// requestReply reports whether a core request (the tool definition, a
// member's view request) may be answered on reply, and counts and logs a
// refusal. The micro framework answers on whatever reply subject a request
// names, with the processor's rights; so answers go only where a trigger's
// answer may go (checkInbox), to a server-given reply subject of a
// service import, for members (fromMembers) under the processors' own
// inbox prefix, and to the processor's own check of its endpoints at start
// (probing).
func (p *Processor) requestReply(reply string, fromMembers bool) bool {
	if validInbox(reply) && under(reply, responsePrefix) || p.probing(reply) {
		return true
	}
	if fromMembers && p.cfg.InboxPrefix != "" && validInbox(reply) && under(reply, p.cfg.InboxPrefix) {
		return true
	}
	err := p.cfg.checkInbox(reply)
	if err == nil {
		return true
	}
	p.m.rejects.WithLabelValues(reasonInbox).Inc()
	p.log.Debug("request not answered", "err", err)
	return false
}
