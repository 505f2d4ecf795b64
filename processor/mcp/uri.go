package mcp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/skillstream/skillstream/catalog"
)

// Scheme is the URI scheme skills are served under: skill://<name>/<path>.
const Scheme = "skill://"

// maxURI bounds the length of a URI (or cursor) the server looks at; a
// longer one names nothing served.
const maxURI = 4096

// splitURI parses a skill URI into the skill name and the path inside the
// skill ("" for the skill's directory itself). It only checks the shape:
// whether the path names a served file or directory is the caller's exact
// lookup, so "..", "%2e%2e", backslashes, NUL bytes, empty segments and
// absolute paths are refused by not matching anything.
func splitURI(uri string) (name, rest string, ok bool) {
	if len(uri) > maxURI || !strings.HasPrefix(uri, Scheme) {
		return "", "", false
	}
	name, rest, _ = strings.Cut(uri[len(Scheme):], "/")
	if !catalog.ValidName(name) {
		return "", "", false
	}
	return name, rest, true
}

// fileURI is the URI of the file at path p of skill name.
func fileURI(name, p string) string { return Scheme + name + "/" + p }

// dirURI is the URI of directory d of skill name ("" for its root),
// without a trailing slash.
func dirURI(name, d string) string {
	if d == "" {
		return Scheme + name
	}
	return Scheme + name + "/" + d
}

// cursors issues and checks the opaque cursors of skills/list: the name
// of the last skill of a page, signed with a key of this process, so a
// cursor the server did not issue is told apart from one it did.
type cursors struct{ key []byte }

func (c cursors) issue(after string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(after))
	return base64.RawURLEncoding.EncodeToString([]byte(after)) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// check returns the name a cursor was issued for.
func (c cursors) check(cur string) (after string, ok bool) {
	if len(cur) > maxURI {
		return "", false
	}
	a, sig, found := strings.Cut(cur, ".")
	if !found {
		return "", false
	}
	name, err1 := base64.RawURLEncoding.DecodeString(a)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return "", false
	}
	m := hmac.New(sha256.New, c.key)
	m.Write(name)
	if !hmac.Equal(got, m.Sum(nil)[:16]) {
		return "", false
	}
	return string(name), true
}
