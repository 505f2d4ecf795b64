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
	"strings"
)

// Output Msg-Ids a worker cannot take.
//
// The stream's duplicate window is stream-wide: whoever appends a message
// with a given Nats-Msg-Id first owns that id for the window, in any
// session. An output's Msg-Id is what makes it exactly-once across retries
// and members, so it must be the same for every member and unknown to
// workers, or a worker could append a record of its own under the id of
// another session's next output and have the real output refused as its
// duplicate. So the Msg-Id is the output's id (session, step or call,
// kind) followed by an HMAC of it under a key every member reads from the
// stream's metadata (OutputKeyMetadata), which only the processors and
// operators can read. The first member that finds the stream without a key
// adds one; every member then uses the key the stream holds.
//
// And because a key can leak (an operator's export, a misconfigured
// stream), a duplicate is trusted only after the record it names is read
// back and found to be the expected output (appendAnswer).

// OutputKeyMetadata is the stream metadata entry holding the key of the
// output Msg-Ids (64 hex digits).
const OutputKeyMetadata = "skillstream_output_key"

// errNoOutputKey reports a stream that did not keep the key it was given.
var errNoOutputKey = errors.New("stream has no output key")

// loadOutputKey reads the stream's output key, adding one first when the
// stream has none and provisioning is on. With provisioning off and no
// key, output Msg-Ids are the plain output ids (predictable): a warning at
// start says so.
func (p *Processor) loadOutputKey(ctx context.Context) error {
	st, err := p.js.Stream(ctx, p.cfg.Stream)
	if err != nil {
		return fmt.Errorf("look up stream %s: %w", p.cfg.Stream, err)
	}
	if key, ok := parseOutputKey(st.CachedInfo().Config.Metadata); ok {
		p.idKey = key
		return nil
	}
	if p.cfg.NoProvision {
		p.log.Warn("the stream has no output key and provisioning is off: output Msg-Ids are predictable, and a worker "+
			"could take one first (the original is then appended under another id, late); add the key to the stream's metadata",
			"stream", p.cfg.Stream, "metadata", OutputKeyMetadata+"=<64 random hex digits>")
		return nil
	}
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		return fmt.Errorf("output key: %w", err)
	}
	cfg := st.CachedInfo().Config
	cfg.Metadata = maps.Clone(cfg.Metadata)
	if cfg.Metadata == nil {
		cfg.Metadata = map[string]string{}
	}
	cfg.Metadata[OutputKeyMetadata] = hex.EncodeToString(k[:])
	if _, err := p.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("add output key to stream %s: %w", p.cfg.Stream, err)
	}
	// Members starting together may each have added a key: the stream
	// keeps the last, and everyone reads it back.
	st, err = p.js.Stream(ctx, p.cfg.Stream)
	if err != nil {
		return fmt.Errorf("look up stream %s: %w", p.cfg.Stream, err)
	}
	key, ok := parseOutputKey(st.CachedInfo().Config.Metadata)
	if !ok {
		return fmt.Errorf("%w: stream %s dropped the key it was given", errNoOutputKey, p.cfg.Stream)
	}
	p.idKey = key
	return nil
}

func parseOutputKey(md map[string]string) ([]byte, bool) {
	k, err := hex.DecodeString(md[OutputKeyMetadata])
	if err != nil || len(k) < 16 {
		return nil, false
	}
	return k, true
}

// msgID is the Nats-Msg-Id of the output whose id (outputID) is id:
// "<id>/<HMAC-SHA256 of id, 128 bits in hex>", or id alone without a key.
func (p *Processor) msgID(id string) string {
	if p.idKey == nil {
		return id
	}
	m := hmac.New(sha256.New, p.idKey)
	m.Write([]byte(id))
	return id + "/" + hex.EncodeToString(m.Sum(nil)[:16])
}

// plainID is the output id a Msg-Id of msgID's making carries.
func plainID(msgID string) string {
	if i := strings.LastIndexByte(msgID, '/'); i >= 0 {
		return msgID[:i]
	}
	return msgID
}
