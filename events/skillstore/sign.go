package skillstore

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nkeys"
)

// A revision's signature is an ed25519 signature, by a publisher's key
// (an nkey), over the revision's statement (Statement): the format and
// its version, the scope and the skill's name (both taken from the index
// key the record is read under, never from the record), the digest of
// its files and the digest of the summary the index shows of it (its
// description, whenToUse and invocation flags, which a catalog lists
// without reading the files; the store provider computes it). A
// signature copied under another key (another skill, or the same skill
// in another scope), beside other files or beside another summary does
// not verify.

// StatementFormat names the format of the signed statement; its version
// is StatementVersion.
const (
	StatementFormat  = "skillstream-skill"
	StatementVersion = 1
)

// SignatureAlg is the only algorithm of Signature.Alg: ed25519 over the
// statement, as nkeys sign.
const SignatureAlg = "ed25519-nkey"

// KeyPrefix is the nkeys role of a publisher's key: server keys ("N..."
// public, "SN..." seed). A NATS deployment stores no seed of that role:
// users log in with user keys, and account and operator keys sign the
// credentials users log in with, while every nats-server makes its own
// server key at start. So a publisher's signing key is never also a key
// that authenticates to NATS, and a credential handed to --sign by
// mistake is refused rather than turned into a signing key.
const KeyPrefix = nkeys.PrefixByteServer

// Errors of signatures. Match them with errors.Is.
var (
	// ErrUnsigned reports a revision that carries no signature.
	ErrUnsigned = errors.New("revision not signed")
	// ErrBadSignature reports a signature that is malformed or does not
	// verify over the revision's statement.
	ErrBadSignature = errors.New("signature does not verify")
	// ErrUntrustedKey reports a signature that verifies, by a key the
	// trust policy does not name.
	ErrUntrustedKey = errors.New("signed by a key that is not trusted")
	// ErrNotSigningKey reports a key or seed that is not a publisher's key.
	ErrNotSigningKey = errors.New("not a skill signing key")
)

// Signature is a revision's signature: the publisher's public key (an
// nkey, "N..."), the algorithm (SignatureAlg) and the signature in
// standard base64.
type Signature struct {
	Key string `json:"key"`
	Alg string `json:"alg"`
	Sig string `json:"sig"`
}

// maxSigField bounds the fields of a Signature, in bytes: a public key is
// 56 characters, an ed25519 signature 88 in base64.
const maxSigField = 128

// Statement is what a revision's signature covers, one field per line:
// the format's name and version, the skill's index key (scope and name),
// the digest of its files and the digest of its summary (64 lowercase
// hex digits each).
func Statement(scope Scope, name, digest, summary string) []byte {
	return fmt.Appendf(nil, "%s/v%d\nkey %s\ndigest %s\nsummary %s\n", StatementFormat, StatementVersion, scope.Key(name), digest, summary)
}

// ValidPublicKey reports whether key is a publisher's public key.
func ValidPublicKey(key string) bool {
	return len(key) <= maxSigField && nkeys.Prefix(key) == KeyPrefix && nkeys.IsValidPublicServerKey(key)
}

// ParseSeed reads a publisher's seed (as keygen writes it: the seed, and
// surrounding white space); it refuses seeds of any other nkeys role.
func ParseSeed(data []byte) (nkeys.KeyPair, error) {
	seed := strings.TrimSpace(string(data))
	if len(seed) > 2*maxSigField {
		return nil, fmt.Errorf("%w: %d bytes", ErrNotSigningKey, len(seed))
	}
	role, _, err := nkeys.DecodeSeed([]byte(seed))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotSigningKey, err)
	}
	if role != KeyPrefix {
		return nil, fmt.Errorf("%w: a seed of another nkeys role (a NATS credential?); make one with skills keygen", ErrNotSigningKey)
	}
	return nkeys.FromSeed([]byte(seed))
}

// NewKey makes a publisher's key pair.
func NewKey() (nkeys.KeyPair, error) {
	return nkeys.CreatePair(KeyPrefix)
}

// Sign signs the statement of skill name in scope with digest and
// summary.
func Sign(kp nkeys.KeyPair, scope Scope, name, digest, summary string) (Signature, error) {
	pub, err := kp.PublicKey()
	if err != nil {
		return Signature{}, err
	}
	if !ValidPublicKey(pub) {
		return Signature{}, fmt.Errorf("%w: public key %q", ErrNotSigningKey, pub)
	}
	sig, err := kp.Sign(Statement(scope, name, digest, summary))
	if err != nil {
		return Signature{}, err
	}
	return Signature{Key: pub, Alg: SignatureAlg, Sig: base64.StdEncoding.EncodeToString(sig)}, nil
}

// Check checks the shape of s (the key a publisher's, the algorithm
// known, the signature 64 bytes of base64) without verifying it.
func (s Signature) Check() error {
	switch {
	case s.Alg != SignatureAlg:
		return fmt.Errorf("%w: algorithm %q, want %q", ErrBadSignature, clipField(s.Alg), SignatureAlg)
	case !ValidPublicKey(s.Key):
		return fmt.Errorf("%w: key %q is not a skill signing key", ErrBadSignature, clipField(s.Key))
	case len(s.Sig) > maxSigField:
		return fmt.Errorf("%w: signature of %d bytes", ErrBadSignature, len(s.Sig))
	}
	raw, err := base64.StdEncoding.DecodeString(s.Sig)
	if err != nil || len(raw) != 64 {
		return fmt.Errorf("%w: signature is not 64 bytes of base64", ErrBadSignature)
	}
	return nil
}

// Verify verifies s over the statement of skill name in scope with
// digest and summary. A nil s is ErrUnsigned.
func Verify(s *Signature, scope Scope, name, digest, summary string) error {
	if s == nil {
		return ErrUnsigned
	}
	if err := s.Check(); err != nil {
		return err
	}
	raw, _ := base64.StdEncoding.DecodeString(s.Sig)
	kp, err := nkeys.FromPublicKey(s.Key)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	if err := kp.Verify(Statement(scope, name, digest, summary), raw); err != nil {
		return fmt.Errorf("%w: by %s over %s at %s", ErrBadSignature, s.Key, scope.Key(name), Short(digest))
	}
	return nil
}

// Trusted verifies s (see Verify) and checks that its key is among keys.
func Trusted(s *Signature, scope Scope, name, digest, summary string, keys []string) error {
	if err := Verify(s, scope, name, digest, summary); err != nil {
		return err
	}
	for _, k := range keys {
		if k == s.Key {
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrUntrustedKey, s.Key)
}

func clipField(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
