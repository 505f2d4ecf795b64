package events

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
)

// UsageSummary is what a usage report counts of an output record, carried
// in its Usage-Summary header (JSON) by the processor that appended it:
//
//   - a catalog: its update kind as reports name it (initial, replacement,
//     tombstone for a replacement listing nothing, changes), the bytes of
//     its text, and Body, the key of its text and source (CatalogBodyKey of
//     the record's body bytes: every record of one catalog body has the
//     same key, so a reader decodes one of them for the names listed);
//   - a skill loaded by a tool result: the skill's name, digest and
//     revision.
//
// Other records (errors, searches, records of other writers) carry none,
// and are read from their payload. A reader of headers only trusts the
// summary as it trusts the record: only processors write outputs.
type UsageSummary struct {
	Kind string `json:"k"` // UsageCatalog or UsageLoad
	// A catalog's.
	Update    string `json:"u,omitempty"`
	TextBytes int64  `json:"t,omitempty"`
	Body      string `json:"b,omitempty"`
	// A load's.
	Skill    string `json:"s,omitempty"`
	Digest   string `json:"d,omitempty"`
	Revision uint64 `json:"r,omitempty"`
	Rev      uint64 `json:"v,omitempty"` // the skill's own revision number
	Channel  string `json:"c,omitempty"` // "canary" or "pin"; stable is left out
}

// Kinds of UsageSummary.
const (
	UsageCatalog = "catalog"
	UsageLoad    = "load"
)

// MaxUsageSummary bounds a Usage-Summary header: longer ones are not
// written, and not read.
const MaxUsageSummary = 512

// Header returns the summary as its header value, or "" when it would be
// too long.
func (u UsageSummary) Header() string {
	b, err := json.Marshal(u)
	if err != nil || len(b) > MaxUsageSummary {
		return ""
	}
	return string(b)
}

// ParseUsageSummary reads a Usage-Summary header value.
func ParseUsageSummary(h string) (UsageSummary, error) {
	var u UsageSummary
	if h == "" {
		return u, errors.New("no usage summary")
	}
	if len(h) > MaxUsageSummary {
		return u, errors.New("usage summary too long")
	}
	if err := json.Unmarshal([]byte(h), &u); err != nil {
		return u, err
	}
	switch u.Kind {
	case UsageCatalog:
		if u.Update == "" || u.Body == "" || u.TextBytes < 0 {
			return u, errors.New("usage summary of a catalog: update or body missing")
		}
	case UsageLoad:
		if u.Skill == "" {
			return u, errors.New("usage summary of a load: skill missing")
		}
	default:
		return u, errors.New("usage summary of an unknown kind")
	}
	return u, nil
}

// CatalogBodyKey is the key of a catalog record's body (CatalogParts.Body):
// the first 16 bytes of its SHA-256, in hex.
func CatalogBodyKey(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:16])
}

// ReportedUpdate is a catalog's update kind as usage reports name it: a
// replacement listing nothing is a tombstone.
func ReportedUpdate(src CatalogSource) string {
	if src.Update == "replacement" && len(src.Entries) == 0 {
		return "tombstone"
	}
	return src.Update
}

// UsageSummary is the summary of every record of this body.
func (b *CatalogBody) UsageSummary() UsageSummary {
	b.summarise()
	return b.summary
}

// UsageHeader is UsageSummary as its header value, made once.
func (b *CatalogBody) UsageHeader() string {
	b.summarise()
	return b.header
}

func (b *CatalogBody) summarise() {
	b.summaryOnce.Do(func() {
		b.summary = UsageSummary{Kind: UsageCatalog, Update: ReportedUpdate(b.source), TextBytes: int64(len(b.text)), Body: CatalogBodyKey(b.raw)}
		b.header = b.summary.Header()
	})
}
