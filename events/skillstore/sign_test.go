package skillstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
)

const (
	dA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// TestSignVerify: a signature verifies over the statement it was made
// for and over no other: another scope, name, digest or summary; a key
// the caller does not trust is told apart from a bad signature.
func TestSignVerify(t *testing.T) {
	kp, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	if !strings.HasPrefix(pub, "N") || !ValidPublicKey(pub) {
		t.Fatalf("public key %q", pub)
	}
	p1, _ := Project("p1")
	s, err := Sign(kp, Global, "a-skill", dA, dB)
	if err != nil {
		t.Fatal(err)
	}
	if err := Trusted(&s, Global, "a-skill", dA, dB, []string{pub}); err != nil {
		t.Fatalf("own signature: %v", err)
	}
	for what, err := range map[string]error{
		"scope":   Verify(&s, p1, "a-skill", dA, dB),
		"name":    Verify(&s, Global, "b-skill", dA, dB),
		"digest":  Verify(&s, Global, "a-skill", dB, dB),
		"summary": Verify(&s, Global, "a-skill", dA, dA),
	} {
		if !errors.Is(err, ErrBadSignature) {
			t.Errorf("moved to another %s: %v, want ErrBadSignature", what, err)
		}
	}
	if err := Trusted(&s, Global, "a-skill", dA, dB, []string{"N" + strings.Repeat("A", 55)}); !errors.Is(err, ErrUntrustedKey) {
		t.Errorf("untrusted key: %v", err)
	}
	if err := Verify(nil, Global, "a-skill", dA, dB); !errors.Is(err, ErrUnsigned) {
		t.Errorf("unsigned: %v", err)
	}
	// A user's seed (a NATS credential) is not a signing key.
	u, _ := nkeys.CreateUser()
	seed, _ := u.Seed()
	if _, err := ParseSeed(seed); !errors.Is(err, ErrNotSigningKey) || strings.Contains(err.Error(), string(seed)) {
		t.Errorf("user seed: %v", err)
	}
	own, _ := kp.Seed()
	if got, err := ParseSeed(append(own, '\n')); err != nil {
		t.Errorf("own seed: %v", err)
	} else if p, _ := got.PublicKey(); p != pub {
		t.Errorf("own seed gives %s, want %s", p, pub)
	}
}

// FuzzVerify: whatever a record or result carries as a signature, Verify
// returns an error wrapping ErrBadSignature (never a panic, never nil for
// a signature not made over that statement).
func FuzzVerify(f *testing.F) {
	kp, _ := NewKey()
	s, _ := Sign(kp, Global, "a-skill", dA, dB)
	f.Add(s.Key, s.Alg, s.Sig)
	f.Add("", "", "")
	f.Add(s.Key, s.Alg, strings.Repeat("A", 10000))
	f.Fuzz(func(t *testing.T, key, alg, sig string) {
		got := Signature{Key: key, Alg: alg, Sig: sig}
		err := Verify(&got, Global, "b-skill", dA, dB)
		if err == nil || !errors.Is(err, ErrBadSignature) {
			t.Fatalf("Verify(%+v) = %v", got, err)
		}
	})
}
