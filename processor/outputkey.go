package processor

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
)

// Output Msg-Ids a worker cannot take, and that tell nothing.
//
// The stream's duplicate window is stream-wide: whoever appends a message
// with a given Nats-Msg-Id first owns that id for the window, in any
// session. An output's Msg-Id is what makes it exactly-once across retries
// and members, so it must be the same for every member and unknown to
// workers, or a worker could append a record of its own under the id of
// another session's next output and have the real output refused as its
// duplicate. So the Msg-Id is an HMAC of the output's id (session, step or
// call, kind) under a key every member reads from the stream's metadata
// (OutputKeyMetadata), which only the processors and operators can read.
// The first member that finds the stream without a key adds one; every
// member then uses the key the stream holds.
//
// The Msg-Id is the HMAC alone, nothing of the output's id in clear: a
// worker can read the Msg-Id of the stream's last message (JetStream quotes
// it when a publication's Nats-Expected-Last-Msg-Id does not match), and
// the session id in it would let the worker append triggers to that
// session. No reader parses a Msg-Id: the session, step or call of a record
// are read from its subject and payload.
//
// And because a key can leak (an operator's export, a misconfigured
// stream), a duplicate is trusted only after the record it names is read
// back and found to be the expected output (appendAnswer).
//
// Older versions made an output's Msg-Id "<output id>/<HMAC>" (or the
// output id alone without a key). A stream written by them may hold such
// ids within its duplicate window when the processors are upgraded; for
// that window (from the moment the first upgraded member found the stream,
// kept in OutputIDsMetadata) an output about to be appended is first looked
// for under its older id (legacyDuplicate), so that the retry of a step
// answered before the upgrade is answered with that answer.

// OutputKeyMetadata is the stream metadata entry holding the key of the
// output Msg-Ids (64 hex digits).
const OutputKeyMetadata = "skillstream_output_key"

// OutputIDsMetadata is the stream metadata entry holding when (unix ms)
// output Msg-Ids became the HMAC alone in this stream; "0" for a stream
// that never held the older form. Its absence, beside a key, marks a
// stream written by an older version.
const OutputIDsMetadata = "skillstream_output_ids_since"

// errNoOutputKey reports a stream that did not keep the key it was given.
var errNoOutputKey = errors.New("stream has no output key")

// loadOutputKey reads the stream's output key, adding one first when the
// stream has none and provisioning is on, and when the stream may still
// hold output Msg-Ids of the older form (OutputIDsMetadata, written the
// same way). With provisioning off and no key, output Msg-Ids are hashes
// without a key (predictable to whoever knows the session id): a warning
// at start says so.
func (p *Processor) loadOutputKey(ctx context.Context) error {
	st, err := p.js.Stream(ctx, p.cfg.Stream)
	if err != nil {
		return fmt.Errorf("look up stream %s: %w", p.cfg.Stream, err)
	}
	info := st.CachedInfo()
	key, hasKey := parseOutputKey(info.Config.Metadata)
	since, hasSince := parseIDsSince(info.Config.Metadata)
	p.replicated = info.Config.Replicas > 1
	if hasKey && hasSince {
		p.idKey = key
		p.legacyUntil = legacyUntil(since, info.Config.Duplicates)
		return nil
	}
	if p.cfg.NoProvision {
		if hasKey {
			p.idKey = key
		} else {
			p.log.Warn("the stream has no output key and provisioning is off: output Msg-Ids are predictable to whoever knows "+
				"the session id, and a worker could take one first (the original is then appended under another id, late); "+
				"add the key to the stream's metadata",
				"stream", p.cfg.Stream, "metadata", OutputKeyMetadata+"=<64 random hex digits>")
		}
		if hasSince {
			p.legacyUntil = legacyUntil(since, info.Config.Duplicates)
		} else {
			// Maybe written by an older version: look for its ids for
			// one window from now.
			p.legacyUntil = p.now().Add(info.Config.Duplicates)
		}
		return nil
	}
	cfg := info.Config
	cfg.Metadata = maps.Clone(cfg.Metadata)
	if cfg.Metadata == nil {
		cfg.Metadata = map[string]string{}
	}
	if !hasKey {
		var k [32]byte
		if _, err := rand.Read(k[:]); err != nil {
			return fmt.Errorf("output key: %w", err)
		}
		cfg.Metadata[OutputKeyMetadata] = hex.EncodeToString(k[:])
	}
	if !hasSince {
		// A stream already keyed, or holding messages, may have been
		// written by an older version: from now on, for one duplicate
		// window, its older ids are looked for. A new stream never held
		// them.
		since := p.now().UnixMilli()
		if !hasKey && info.State.Msgs == 0 {
			since = 0
		}
		cfg.Metadata[OutputIDsMetadata] = strconv.FormatInt(since, 10)
	}
	if _, err := p.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("add output key to stream %s: %w", p.cfg.Stream, err)
	}
	// Members starting together may each have added a key: the stream
	// keeps the last, and everyone reads it back.
	st, err = p.js.Stream(ctx, p.cfg.Stream)
	if err != nil {
		return fmt.Errorf("look up stream %s: %w", p.cfg.Stream, err)
	}
	info = st.CachedInfo()
	key, ok := parseOutputKey(info.Config.Metadata)
	if !ok {
		return fmt.Errorf("%w: stream %s dropped the key it was given", errNoOutputKey, p.cfg.Stream)
	}
	if since, ok = parseIDsSince(info.Config.Metadata); !ok {
		return fmt.Errorf("%w: stream %s dropped the %s it was given", errNoOutputKey, p.cfg.Stream, OutputIDsMetadata)
	}
	p.idKey = key
	p.legacyUntil = legacyUntil(since, info.Config.Duplicates)
	return nil
}

func parseOutputKey(md map[string]string) ([]byte, bool) {
	k, err := hex.DecodeString(md[OutputKeyMetadata])
	if err != nil || len(k) < 16 {
		return nil, false
	}
	return k, true
}

func parseIDsSince(md map[string]string) (int64, bool) {
	ms, err := strconv.ParseInt(md[OutputIDsMetadata], 10, 64)
	return ms, err == nil && ms >= 0
}

// legacyUntil is when a stream whose output ids became the HMAC alone at
// since (unix ms; 0: always were) holds no older id in its duplicate
// window dup; the zero time for never.
func legacyUntil(since int64, dup time.Duration) time.Time {
	if since == 0 {
		return time.Time{}
	}
	return time.UnixMilli(since).Add(dup)
}

// msgID is the Nats-Msg-Id of the output whose id (outputID) is id: the
// HMAC-SHA256 of id under the stream's key, 128 bits in hex; without a
// key, the SHA-256 of id, as long. Either way nothing of id is in it.
func (p *Processor) msgID(id string) string {
	var sum []byte
	if p.idKey == nil {
		s := sha256.Sum256([]byte("skillstream output id\x00" + id))
		sum = s[:]
	} else {
		m := hmac.New(sha256.New, p.idKey)
		m.Write([]byte(id))
		sum = m.Sum(nil)
	}
	return hex.EncodeToString(sum[:16])
}

// legacyMsgID is the Msg-Id older versions gave the output whose id is id:
// "<id>/<msgID's HMAC>", or id alone without a key.
func (p *Processor) legacyMsgID(id string) string {
	if p.idKey == nil {
		return id
	}
	m := hmac.New(sha256.New, p.idKey)
	m.Write([]byte(id))
	return id + "/" + hex.EncodeToString(m.Sum(nil)[:16])
}

// probeIDPrefix starts the expected last Msg-Id of legacyDuplicate's
// probes, which no message of the stream has.
const probeIDPrefix = "skillstream-probe-"

// legacyDuplicate reports the sequence of the record the stream holds
// under the older Msg-Id of an output (legacyMsgID) within its duplicate
// window, 0 for none, while the stream may hold such ids (legacyUntil).
// It asks by publishing an empty message on subject under that id with an
// expectation no stream meets, one the stream checks after the Msg-Id: it
// answers a duplicate (naming the original's sequence) before it looks at
// the expectation, and refuses everything else, so nothing is stored. A
// single server checks expected sequences before the Msg-Id and the
// expected last Msg-Id after it; a replicated stream checks the Msg-Id
// first, and keeps the id of a publication it let through that far as
// pending until the window ends, unless the expected last sequence
// refuses it before it is proposed.
func (p *Processor) legacyDuplicate(ctx context.Context, subject, id string) (uint64, error) {
	if p.legacyUntil.IsZero() || !p.now().Before(p.legacyUntil) {
		return 0, nil
	}
	m := &nats.Msg{Subject: subject, Header: nats.Header{events.HeaderMsgID: []string{p.legacyMsgID(id)}}}
	if p.replicated {
		m.Header.Set(jetstream.ExpectedLastSeqHeader, strconv.FormatUint(math.MaxUint64, 10))
	} else {
		var nonce [16]byte
		_, _ = rand.Read(nonce[:])
		m.Header.Set(headerExpectedLastMsgID, probeIDPrefix+hex.EncodeToString(nonce[:]))
	}
	actx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	ack, err := p.js.PublishMsg(actx, m)
	cancel()
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errCodeWrongLastMsgID, jetstream.JSErrCodeStreamWrongLastSequence, errCodeWrongLastSequenceConstant:
			return 0, nil
		}
	}
	if err != nil {
		return 0, fmt.Errorf("look for an output under its older Msg-Id on %s: %w", subject, err)
	}
	if !ack.Duplicate {
		return 0, fmt.Errorf("look for an output under its older Msg-Id on %s: the stream stored the probe at %d", subject, ack.Sequence)
	}
	return ack.Sequence, nil
}

// headerExpectedLastMsgID is JetStream's header naming the Msg-Id a
// publication expects the stream's last message to have.
const headerExpectedLastMsgID = "Nats-Expected-Last-Msg-Id"

// errCodeWrongLastMsgID is the JetStream API error code of a publication
// whose expected last Msg-Id does not match.
const errCodeWrongLastMsgID jetstream.ErrorCode = 10070
