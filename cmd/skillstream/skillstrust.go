package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/store"
)

// keygen makes a publisher's key: the seed written to out (created, mode
// 0600, never overwritten and never printed), the public key printed.
func (a *app) keygen(args []string, out string) error {
	if len(args) > 0 {
		return usagef("skills keygen takes no arguments, got %q (--out names the seed file)", args[0])
	}
	if out == "" {
		out = "skillstream-signing.seed"
	}
	kp, err := skillstore.NewKey()
	if err != nil {
		return err
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists: keygen never overwrites a key; choose another --out", out)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(append(seed, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
		return fmt.Errorf("write %s: %w", out, err)
	}
	abs, _ := filepath.Abs(out)
	fmt.Fprintf(a.stdout, "public key %s\n", pub)
	fmt.Fprintf(a.stdout, "seed written to %s (mode 0600; keep it secret: whoever holds it signs as you)\n", abs)
	fmt.Fprintf(a.stdout, "trust it: skillstream skills trust add %s\n", pub)
	return nil
}

// readSigner reads the seed file of push --sign. A seed readable by
// others than its owner is refused, as ssh refuses such keys.
func readSigner(path string) (nkeys.KeyPair, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("--sign: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("--sign: %s is readable by others (mode %04o): chmod 600 it (and make a new key if others may have read it)", path, info.Mode().Perm())
	}
	if info.Size() > 1024 {
		return nil, fmt.Errorf("--sign: %s is %d bytes: not a seed written by skills keygen", path, info.Size())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--sign: %w", err)
	}
	kp, err := skillstore.ParseSeed(data)
	if err != nil {
		return nil, fmt.Errorf("--sign %s: %w", path, err)
	}
	return kp, nil
}

// trustAction checks the arguments of skills trust and returns what runs
// it: add KEY, remove KEY, require off|warn|signed, library trust|ignore,
// show.
func (a *app) trustAction(args []string, asJSON bool) (func(context.Context, *store.Publisher) error, error) {
	if len(args) == 0 {
		return nil, usagef("skills trust needs an action: add KEY, remove KEY, require off|warn|signed, library trust|ignore, or show")
	}
	verb, args := args[0], args[1:]
	if asJSON && verb != "show" {
		return nil, usagef("--json applies to trust show only")
	}
	var change func(*store.TrustPolicy) error
	switch verb {
	case "show":
		if len(args) != 0 {
			return nil, usagef("skills trust show takes no arguments")
		}
		return func(ctx context.Context, pb *store.Publisher) error {
			t, rev, err := pb.ReadPolicy(ctx)
			if err != nil {
				return err
			}
			return a.printPolicy(a.stdout, t, rev, asJSON)
		}, nil
	case "add", "remove":
		if len(args) != 1 {
			return nil, usagef("skills trust %s needs one public key", verb)
		}
		key := args[0]
		if err := store.CheckKey(key); err != nil {
			return nil, usagef("%v", err)
		}
		change = func(t *store.TrustPolicy) error {
			has := slices.Contains(t.Keys, key)
			switch {
			case verb == "add" && has:
				return fmt.Errorf("%s is already trusted", key)
			case verb == "add":
				t.Keys = append(t.Keys, key)
			case !has:
				return fmt.Errorf("%s is not trusted: nothing to remove", key)
			default:
				t.Keys = slices.DeleteFunc(t.Keys, func(k string) bool { return k == key })
			}
			return nil
		}
	case "require":
		if len(args) != 1 {
			return nil, usagef("skills trust require needs off, warn or signed")
		}
		req, err := store.ParseRequire(args[0])
		if err != nil {
			return nil, usagef("%v", err)
		}
		change = func(t *store.TrustPolicy) error {
			if req == store.RequireSigned && len(t.Keys) == 0 && t.Library != store.LibraryTrust {
				return errors.New("require signed with no trusted key would offer no skill: skills trust add KEY first")
			}
			t.Require = req
			return nil
		}
	case "library":
		if len(args) != 1 || (args[0] != store.LibraryTrust && args[0] != store.LibraryIgnore) {
			return nil, usagef("skills trust library needs trust or ignore")
		}
		choice := args[0]
		change = func(t *store.TrustPolicy) error {
			t.Library = choice
			return nil
		}
	default:
		return nil, usagef("unknown skills trust action %q: want add, remove, require, library or show", verb)
	}
	return func(ctx context.Context, pb *store.Publisher) error {
		t, rev, err := pb.ChangePolicy(ctx, change)
		if err != nil {
			return err
		}
		return a.printPolicy(a.stdout, t, rev, false)
	}, nil
}

// printPolicy prints a trust policy: a line per setting and per key, or
// with asJSON the policy and its revision as one object.
func (a *app) printPolicy(w io.Writer, t store.TrustPolicy, rev uint64, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			store.TrustPolicy
			Revision uint64 `json:"revision"`
		}{t, rev})
	}
	lib := t.Library
	if lib == "" {
		lib = store.LibraryIgnore
	}
	fmt.Fprintf(w, "require  %s\n", t.Require)
	fmt.Fprintf(w, "library  %s\n", lib)
	if len(t.Keys) == 0 {
		fmt.Fprintln(w, "keys     none")
	}
	for _, k := range t.Keys {
		fmt.Fprintf(w, "key      %s\n", k)
	}
	if rev == 0 {
		fmt.Fprintln(w, "(no policy written: the store requires nothing)")
	} else {
		fmt.Fprintf(w, "store revision %d\n", rev)
	}
	return nil
}

// keyOf is the public key of kp, for messages.
func keyOf(kp nkeys.KeyPair) string {
	k, _ := kp.PublicKey()
	return strings.TrimSpace(k)
}

// revokeAction checks the arguments of skills revoke, unrevoke and
// revocations and returns what runs it: revoke and unrevoke take one of
// --key KEY or --digest DIGEST and change the store's trust policy
// (conditional on the policy read); revocations prints what is revoked.
func (a *app) revokeAction(action string, args []string, key, digest string, asJSON bool) (func(context.Context, *store.Publisher) error, error) {
	if len(args) != 0 {
		return nil, usagef("skills %s takes no arguments (give --key KEY or --digest DIGEST)", action)
	}
	if action == "revocations" {
		if key != "" || digest != "" {
			return nil, usagef("--key and --digest apply to revoke and unrevoke only")
		}
		return func(ctx context.Context, pb *store.Publisher) error {
			t, rev, err := pb.ReadPolicy(ctx)
			if err != nil {
				return err
			}
			return a.printRevocations(a.stdout, t, rev, asJSON)
		}, nil
	}
	if asJSON {
		return nil, usagef("--json applies to revocations, not %s", action)
	}
	if (key == "") == (digest == "") {
		return nil, usagef("skills %s needs one of --key KEY or --digest DIGEST", action)
	}
	what, list := key, func(r *store.Revoked) *[]string { return &r.Keys }
	if key != "" {
		if err := store.CheckKey(key); err != nil {
			return nil, usagef("--key: %v", err)
		}
	} else {
		if !skillstore.ValidDigest(digest) {
			return nil, usagef("--digest: %q is not a digest (64 lowercase hex digits, as skills status NAME --json prints it)", clipArg(digest))
		}
		what, list = digest, func(r *store.Revoked) *[]string { return &r.Digests }
	}
	change := func(t *store.TrustPolicy) error {
		if t.Revoked == nil {
			t.Revoked = &store.Revoked{}
		}
		l := list(t.Revoked)
		has := slices.Contains(*l, what)
		switch {
		case action == "revoke" && has:
			return fmt.Errorf("%s is already revoked: the store is unchanged", what)
		case action == "revoke":
			*l = append(*l, what)
		case !has:
			return fmt.Errorf("%s is not revoked: nothing to unrevoke, the store is unchanged", what)
		default:
			*l = slices.DeleteFunc(*l, func(k string) bool { return k == what })
		}
		return nil
	}
	return func(ctx context.Context, pb *store.Publisher) error {
		t, rev, err := pb.ChangePolicy(ctx, change)
		if err != nil {
			return err
		}
		return a.printRevocations(a.stdout, t, rev, false)
	}, nil
}

// clipArg shortens a hostile argument for an error message.
func clipArg(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// printRevocations prints what a trust policy revokes: a line per key and
// per digest, or with asJSON one object.
func (a *app) printRevocations(w io.Writer, t store.TrustPolicy, rev uint64, asJSON bool) error {
	keys, digests := t.RevokedKeys(), t.RevokedDigests()
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Keys     []string `json:"keys"`
			Digests  []string `json:"digests"`
			Revision uint64   `json:"revision"`
		}{append([]string{}, keys...), append([]string{}, digests...), rev})
	}
	if len(keys)+len(digests) == 0 {
		fmt.Fprintln(w, "nothing revoked")
	}
	for _, k := range keys {
		fmt.Fprintf(w, "revoked key     %s\n", k)
	}
	for _, d := range digests {
		fmt.Fprintf(w, "revoked digest  %s\n", d)
	}
	if rev != 0 {
		fmt.Fprintf(w, "store revision %d\n", rev)
	}
	return nil
}
