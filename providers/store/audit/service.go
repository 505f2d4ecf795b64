package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"
)

// Index is the skill store index of one account, as the service reads it
// to check a claim.
type Index struct {
	JS     jetstream.JetStream
	Bucket string // the index bucket (its stream is KV_<Bucket>)
}

// Config is how Serve runs.
type Config struct {
	// NC is the connection of the service's own account; JS its JetStream
	// (the audit streams live there).
	NC *nats.Conn
	JS jetstream.JetStream
	// Resolve finds the store index of an account the service audits:
	// every tenant's, and the library's. An account it does not know is
	// refused.
	Resolve func(account string) (Index, bool)
	// LibraryAccount is the library's account ("" without one): only its
	// users claim library writes, and every caller may read its records.
	LibraryAccount string
	// MaxBytes bounds each account's audit stream (default 64 MiB); the
	// oldest records leave first.
	MaxBytes int64
	// Replicas of each audit stream (default 1).
	Replicas int
	// Rate and Burst bound the claims and queries of one account per
	// second (default 20 and 200): past them an account is answered
	// "busy", and the others are not slowed.
	Rate  float64
	Burst int
	Log   *slog.Logger
	Now   func() time.Time
}

// MaxPerRevision bounds the records kept of one store revision: claims
// past it replace the oldest of them.
const MaxPerRevision = 8

// DefaultMaxBytes bounds each account's audit stream.
const DefaultMaxBytes = 64 << 20

type service struct {
	cfg      Config
	mu       sync.Mutex
	streams  map[string]bool // audit streams made, by account
	limiters map[string]*rate.Limiter
}

// Serve answers claims and queries until ctx ends. Several members may
// run it: each request is answered by one.
func Serve(ctx context.Context, cfg Config) error {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 20
	}
	if cfg.Burst <= 0 {
		cfg.Burst = 200
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &service{cfg: cfg, streams: map[string]bool{}, limiters: map[string]*rate.Limiter{}}
	sub, err := cfg.NC.QueueSubscribe(Subjects, queueGroup, s.handle)
	if err != nil {
		return fmt.Errorf("audit: subscribe %s: %w", Subjects, err)
	}
	defer sub.Unsubscribe()
	if err := cfg.NC.Flush(); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	<-ctx.Done()
	return nil
}

// requester is what the server says about a request's sender.
type requester struct {
	Account string `json:"acc"`
	User    string `json:"user"`
	Name    string `json:"name"`
	NameTag string `json:"name_tag"`
}

func (s *service) handle(m *nats.Msg) {
	ans := s.answer(m)
	b, err := json.Marshal(ans)
	if err != nil {
		b = []byte(`{"error":"audit: could not encode the answer"}`)
	}
	if m.Reply != "" {
		_ = m.Respond(b)
	}
}

func (s *service) answer(m *nats.Msg) Answer {
	var who requester
	info := m.Header.Get("Nats-Request-Info")
	if info == "" || json.Unmarshal([]byte(info), &who) != nil || who.Account == "" {
		return Answer{Error: "audit: the request carries no identity from the server: reach this service through an import of another account"}
	}
	if who.User == "" && who.NameTag == "" {
		return Answer{Error: "audit: the server did not share who sent the request: the account must import " + Subjects + " with share: true"}
	}
	if !s.allow(who.Account) {
		return Answer{Error: "audit: busy: too many requests from account " + who.Account + "; retry in a second"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch m.Subject {
	case RecordSubject:
		c, err := DecodeClaim(m.Data)
		if err != nil {
			return Answer{Error: err.Error()}
		}
		r, err := s.record(ctx, who, c)
		if err != nil {
			s.cfg.Log.Warn("audit claim refused", "account", who.Account, "user", who.User, "op", c.Op, "key", c.Key, "err", err)
			return Answer{Error: err.Error()}
		}
		return Answer{Record: &r}
	case QuerySubject:
		q, err := DecodeQuery(m.Data)
		if err != nil {
			return Answer{Error: err.Error()}
		}
		rs, more, err := s.query(ctx, who, q)
		if err != nil {
			return Answer{Error: err.Error()}
		}
		return Answer{Records: rs, Truncated: more}
	}
	return Answer{Error: "audit: unknown request " + m.Subject + ": want " + RecordSubject + " or " + QuerySubject}
}

func (s *service) allow(account string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.limiters[account]
	if l == nil {
		if _, ok := s.cfg.Resolve(account); !ok && account != s.cfg.LibraryAccount {
			return true // refused further on, without a limiter kept for it
		}
		l = rate.NewLimiter(rate.Limit(s.cfg.Rate), s.cfg.Burst)
		s.limiters[account] = l
	}
	return l.Allow()
}

// storeAccount is the account whose store a claim or query of who is
// about.
func (s *service) storeAccount(who requester, store string) (string, error) {
	if store == StoreLibrary {
		if s.cfg.LibraryAccount == "" {
			return "", errors.New("audit: this deployment has no library")
		}
		return s.cfg.LibraryAccount, nil
	}
	if who.Account == s.cfg.LibraryAccount {
		return "", errors.New("audit: the library's users write the library: claim store library")
	}
	return who.Account, nil
}

// record checks c against the store and appends it.
func (s *service) record(ctx context.Context, who requester, c Claim) (Record, error) {
	acct, err := s.storeAccount(who, c.Store)
	if err != nil {
		return Record{}, err
	}
	if c.Store == StoreLibrary && who.Account != s.cfg.LibraryAccount {
		return Record{}, fmt.Errorf("audit: account %s does not write the library", who.Account)
	}
	idx, ok := s.cfg.Resolve(acct)
	if !ok {
		return Record{}, fmt.Errorf("audit: account %s is not a tenant this service audits", acct)
	}
	e, err := s.entry(ctx, idx, c)
	if err != nil {
		return Record{}, err
	}
	c.Revision = e.Sequence
	if c.Op == OpPush || c.Op == OpRollback {
		sum, err := summary(e.Data)
		if err != nil {
			return Record{}, fmt.Errorf("audit: revision %d of %s: %w", e.Sequence, c.Key, err)
		}
		if c.Digest != "" && c.Digest != sum.Digest {
			return Record{}, fmt.Errorf("audit: revision %d of %s has digest %s, not %s", e.Sequence, c.Key, sum.Digest, c.Digest)
		}
		c.Digest, c.Signer = sum.Digest, ""
		if sum.Signature != nil {
			c.Signer = sum.Signature.Key
		}
	}
	r := Record{Claim: c, Account: who.Account, User: who.User, UserName: who.NameTag, Conn: clip(who.Name), At: s.cfg.Now().UTC()}
	if err := s.ensureStream(ctx, acct); err != nil {
		return Record{}, err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return Record{}, err
	}
	subj := subject(acct, r)
	id := sha256.Sum256([]byte(subj + "\x00" + r.Account + "\x00" + r.User + "\x00" + r.Op))
	if _, err := s.cfg.JS.Publish(ctx, subj, b, jetstream.WithExpectStream(StreamName(acct)), jetstream.WithMsgID(hex.EncodeToString(id[:16]))); err != nil {
		return Record{}, fmt.Errorf("audit: append to %s: %w", StreamName(acct), err)
	}
	return r, nil
}

// entry is the index entry a claim names: revision c.Revision, or the
// key's newest.
func (s *service) entry(ctx context.Context, idx Index, c Claim) (*jetstream.RawStreamMsg, error) {
	st, err := idx.JS.Stream(ctx, "KV_"+idx.Bucket)
	if err != nil {
		return nil, fmt.Errorf("audit: the store's index: %w", err)
	}
	subj := "$KV." + idx.Bucket + "." + c.Key
	var e *jetstream.RawStreamMsg
	if c.Revision > 0 {
		e, err = st.GetMsg(ctx, c.Revision)
	} else {
		e, err = st.GetLastMsgForSubject(ctx, subj)
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		if c.Revision > 0 {
			return nil, fmt.Errorf("audit: the store has no revision %d", c.Revision)
		}
		return nil, fmt.Errorf("audit: the store has no entry %s", c.Key)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: read the store's index: %w", err)
	}
	if e.Subject != subj {
		return nil, fmt.Errorf("audit: revision %d of the store is not %s", c.Revision, c.Key)
	}
	removal := e.Header.Get("KV-Operation") != ""
	switch {
	case c.Op == OpRemove && !removal:
		return nil, fmt.Errorf("audit: revision %d of %s is not a removal", e.Sequence, c.Key)
	case (c.Op == OpPush || c.Op == OpRollback) && removal:
		return nil, fmt.Errorf("audit: revision %d of %s is a removal", e.Sequence, c.Key)
	}
	return e, nil
}

// indexSummary is what a record states of an index value.
type indexSummary struct {
	Digest    string `json:"digest"`
	Signature *struct {
		Key string `json:"key"`
	} `json:"signature"`
}

// maxIndexValue bounds an index value read: a store's records are far
// smaller.
const maxIndexValue = 64 << 10

func summary(v []byte) (indexSummary, error) {
	var r indexSummary
	if len(v) > maxIndexValue {
		return r, fmt.Errorf("index value of %d bytes", len(v))
	}
	if err := json.Unmarshal(v, &r); err != nil {
		return r, fmt.Errorf("index value: %v", err)
	}
	if r.Signature != nil && !signerRE.MatchString(r.Signature.Key) {
		r.Signature = nil
	}
	return r, nil
}

func (s *service) ensureStream(ctx context.Context, acct string) error {
	s.mu.Lock()
	made := s.streams[acct]
	s.mu.Unlock()
	if made {
		return nil
	}
	_, err := s.cfg.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              StreamName(acct),
		Description:       "skillstream audit records of account " + acct,
		Subjects:          []string{"auditlog." + token(acct) + ".>"},
		Storage:           jetstream.FileStorage,
		Replicas:          s.cfg.Replicas,
		MaxBytes:          s.cfg.MaxBytes,
		MaxMsgsPerSubject: MaxPerRevision,
		Discard:           jetstream.DiscardOld,
		Duplicates:        2 * time.Minute,
	})
	if err != nil {
		return fmt.Errorf("audit: stream %s: %w", StreamName(acct), err)
	}
	s.mu.Lock()
	s.streams[acct] = true
	s.mu.Unlock()
	return nil
}

// query reads the newest MaxAnswer records of one skill.
func (s *service) query(ctx context.Context, who requester, q Query) ([]Record, bool, error) {
	acct, err := s.storeAccount(who, q.Store)
	if err != nil {
		return nil, false, err
	}
	if _, ok := s.cfg.Resolve(acct); !ok {
		return nil, false, fmt.Errorf("audit: account %s is not a tenant this service audits", acct)
	}
	st, err := s.cfg.JS.Stream(ctx, StreamName(acct))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("audit: %w", err)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter(acct, q.Store, q.Name)}})
	if err != nil {
		return nil, false, fmt.Errorf("audit: read %s: %w", StreamName(acct), err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("audit: read %s: %w", StreamName(acct), err)
	}
	left := info.NumPending
	var out []Record
	more := false
	for left > 0 && ctx.Err() == nil {
		batch, err := cons.Fetch(int(min(left, 256)), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, false, fmt.Errorf("audit: read %s: %w", StreamName(acct), err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			left--
			var r Record
			if json.Unmarshal(m.Data(), &r) != nil {
				continue
			}
			out = append(out, r)
			if len(out) > MaxAnswer {
				out, more = out[1:], true
			}
		}
		if got == 0 {
			break
		}
	}
	return out, more, nil
}
