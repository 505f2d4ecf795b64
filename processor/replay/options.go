package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// Setting is one option that shapes model text, as a replay uses it: the
// flag that sets it, the value used and, when the recording says it, the
// value the session was recorded under.
type Setting struct {
	Flag     string `json:"flag"`
	Value    string `json:"value"`
	Recorded string `json:"recorded,omitempty"`
	// Given is true when the caller's flag set it (it overrides the
	// recording).
	Given bool `json:"given,omitempty"`
}

// Differs reports whether the value used is not the recorded one.
func (s Setting) Differs() bool { return s.Recorded != "" && s.Recorded != s.Value }

// optionFlags are the options a recording carries, by the flag that sets
// each (serve's and replay's alike), in the order they are reported.
var optionFlags = []struct {
	flag string
	get  func(catalog.Options) string
	rec  func(events.CatalogOptions) string
	set  func(*catalog.Options, events.CatalogOptions)
	// optional options are named only when on, given or recorded on
	// (off is their value when off), so the report of a replay without
	// them is as it was.
	optional bool
	off      string
}{
	{"catalog-max-length",
		func(o catalog.Options) string { return strconv.Itoa(o.MaxLength) },
		func(r events.CatalogOptions) string { return strconv.Itoa(r.MaxLength) },
		func(o *catalog.Options, r events.CatalogOptions) { o.MaxLength = r.MaxLength }, false, ""},
	{"catalog-description-max-length",
		func(o catalog.Options) string { return strconv.Itoa(o.DescriptionMaxLength) },
		func(r events.CatalogOptions) string { return strconv.Itoa(r.DescriptionMax) },
		func(o *catalog.Options, r events.CatalogOptions) { o.DescriptionMaxLength = r.DescriptionMax }, false, ""},
	{"max-skill-bytes",
		func(o catalog.Options) string { return strconv.Itoa(o.MaxSkillBytes) },
		func(r events.CatalogOptions) string { return strconv.Itoa(r.MaxSkillBytes) },
		func(o *catalog.Options, r events.CatalogOptions) { o.MaxSkillBytes = r.MaxSkillBytes }, false, ""},
	{"skill-search",
		func(o catalog.Options) string { return strconv.FormatBool(o.SkillSearch) },
		func(r events.CatalogOptions) string { return strconv.FormatBool(r.Search) },
		func(o *catalog.Options, r events.CatalogOptions) { o.SkillSearch = r.Search }, false, ""},
	{"search-bodies",
		func(o catalog.Options) string { return strconv.FormatBool(o.SearchBodies) },
		func(r events.CatalogOptions) string { return strconv.FormatBool(r.SearchBodies) },
		func(o *catalog.Options, r events.CatalogOptions) { o.SearchBodies = r.SearchBodies }, true, "false"},
	{"catalog-listed-max",
		func(o catalog.Options) string { return strconv.Itoa(o.ListedMax) },
		func(r events.CatalogOptions) string { return strconv.Itoa(r.ListedMax) },
		func(o *catalog.Options, r events.CatalogOptions) { o.ListedMax = r.ListedMax }, false, ""},
	{"catalog-updates",
		func(o catalog.Options) string { return updatesName(string(o.Updates)) },
		func(r events.CatalogOptions) string { return updatesName(r.Updates) },
		func(o *catalog.Options, r events.CatalogOptions) { o.Updates = catalog.Updates(updatesName(r.Updates)) }, false, ""},
	{"user-invocation",
		func(o catalog.Options) string { return strconv.FormatBool(o.UserInvocation) },
		func(r events.CatalogOptions) string { return strconv.FormatBool(r.UserInvocation) },
		func(o *catalog.Options, r events.CatalogOptions) { o.UserInvocation = r.UserInvocation }, false, ""},
	{"catalog-rank",
		func(o catalog.Options) string { return rankName(string(o.Rank)) },
		func(r events.CatalogOptions) string { return rankName(r.Rank) },
		func(o *catalog.Options, r events.CatalogOptions) {
			o.Rank = ""
			if r.Rank == string(catalog.RankUse) {
				o.Rank = catalog.RankUse
			}
		}, true, string(catalog.RankName)},
}

// rankName is a rank as its flag says it: "" is name.
func rankName(r string) string {
	if r == "" {
		return string(catalog.RankName)
	}
	return r
}

func updatesName(u string) string {
	if u == "" {
		return string(catalog.UpdatesFull)
	}
	return u
}

// MergeOptions returns the options a replay uses: those the recording
// says (rec; nil for a recording made before recordings carried them)
// where the caller gave no flag (given reports whether the flag of that
// name was given), else flags'. The settings say, per option, the value
// used and the recorded one. Other fields of flags (SearchOffered) are
// kept. The options returned are not validated: a recording's may be
// hostile, and NewReplayer refuses invalid ones.
func MergeOptions(flags catalog.Options, given func(flag string) bool, rec *events.CatalogOptions) (catalog.Options, []Setting) {
	out := flags
	settings := make([]Setting, 0, len(optionFlags))
	for _, f := range optionFlags {
		s := Setting{Flag: f.flag, Given: given != nil && given(f.flag)}
		if rec != nil {
			s.Recorded = f.rec(*rec)
			if !s.Given {
				f.set(&out, *rec)
			}
		}
		s.Value = f.get(out)
		if f.optional && !s.Given && s.Value == f.off && (s.Recorded == "" || s.Recorded == f.off) {
			continue // an option added later, off on both sides: not named
		}
		settings = append(settings, s)
	}
	return out, settings
}

// optionsOf is the options a recorded catalog carries, nil when it does
// not decode or carries none.
func optionsOf(l events.Layout, e *Event) *events.CatalogOptions {
	c, ok := decodeCatalog(l, e)
	if !ok {
		return nil
	}
	return c.Source.Options
}

// RecordedOptions reads a recording to its end and returns the options
// the session was recorded under: its header's, else those of its newest
// catalog record that carries them; nil when neither says (a recording
// made before sessions recorded their options, or of a session that never
// got a catalog).
func RecordedOptions(r *Reader) (*events.CatalogOptions, error) {
	h := r.Header()
	if h.Options != nil {
		return h.Options, nil
	}
	var newest *events.CatalogOptions
	for {
		it, err := r.Next()
		if err == io.EOF {
			return newest, nil
		}
		if err != nil {
			return nil, err
		}
		if it.Event == nil {
			continue
		}
		sid, kind, err := events.ParseSubjectIn(h.Layout, h.Prefix, it.Event.Subject)
		if err != nil || sid != h.Session || kind != events.KindCatalog {
			continue
		}
		if o := optionsOf(h.Layout, it.Event); o != nil {
			newest = o
		}
	}
}

// SessionOptions returns the options session sid of stream was recorded
// under: those its newest catalog record carries, read through an
// ephemeral consumer of that one subject (as ReadSession reads); nil
// when it has no catalog or its catalog carries none.
func SessionOptions(ctx context.Context, js jetstream.JetStream, stream, prefix string, l events.Layout, sid string) (*events.CatalogOptions, error) {
	subject := events.Subject(prefix, sid, events.KindCatalog)
	cons, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Description:       "skillstream session reader (export, replay: options)",
		FilterSubjects:    []string{subject},
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: 30 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("read session %s options from stream %s: %w", sid, stream, err)
	}
	name := cons.CachedInfo().Name
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = js.DeleteConsumer(dctx, stream, name)
	}()
	if cons.CachedInfo().NumPending == 0 {
		return nil, nil
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	batch, err := cons.Fetch(1, jetstream.FetchContext(fctx))
	if err != nil {
		return nil, fmt.Errorf("read session %s options: %w", sid, err)
	}
	for msg := range batch.Messages() {
		md, err := msg.Metadata()
		if err != nil {
			return nil, fmt.Errorf("read session %s options: %w", sid, err)
		}
		e := Event{Seq: md.Sequence.Stream, Subject: msg.Subject(), Time: md.Timestamp, Headers: msg.Headers(), Data: msg.Data()}
		return optionsOf(l, &e), nil
	}
	if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("read session %s options: %w", sid, err)
	}
	return nil, nil
}
