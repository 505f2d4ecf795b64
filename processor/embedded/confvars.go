package embedded

import (
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/nats-io/nats-server/v2/conf"
)

// Variable is a variable a NATS server configuration refers to ($NAME)
// without defining it: the server reads it from the environment.
type Variable struct {
	Name    string
	Line    int    // first line referring to it
	User    string // the user whose value it is on that line ("" if none)
	Account string // the account block holding that line ("" if none)
}

// For says what the variable is for, in a few words.
func (v Variable) For() string {
	switch {
	case v.User != "" && v.Account != "":
		return fmt.Sprintf("password of user %s (account %s)", v.User, v.Account)
	case v.User != "":
		return "password of user " + v.User
	}
	return fmt.Sprintf("named on line %d", v.Line)
}

var (
	confVarRef   = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)
	confDefine   = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=|:|\{)`)
	confAccount  = regexp.MustCompile(`^\s*([A-Z][A-Z0-9_]*)\s*[:=]?\s*\{`)
	confUserName = regexp.MustCompile(`\buser\s*[:=]\s*"?([^\s,"}]+)`)
)

// Variables lists the variables of a NATS server configuration's text
// that it does not define itself, in the order they first appear. It reads
// the text as the server's parser does for this purpose: comments (# and
// //) and quoted strings hold no references. Files the text includes
// (include FILE) are not read: their variables are the server's to report.
func Variables(text string) []Variable {
	defined := map[string]bool{}
	var out []Variable
	seen := map[string]bool{}
	account := ""
	for i, line := range strings.Split(text, "\n") {
		code := unquotedCode(line)
		if m := confDefine.FindStringSubmatch(code); m != nil {
			defined[m[1]] = true
		}
		if m := confAccount.FindStringSubmatch(code); m != nil && m[1] != "" {
			account = m[1]
		}
		for _, m := range confVarRef.FindAllStringSubmatch(code, -1) {
			if seen[m[1]] {
				continue
			}
			seen[m[1]] = true
			v := Variable{Name: m[1], Line: i + 1, Account: account}
			if u := confUserName.FindStringSubmatch(code); u != nil {
				v.User = u[1]
			}
			out = append(out, v)
		}
	}
	kept := out[:0]
	for _, v := range out {
		if !defined[v.Name] {
			kept = append(kept, v)
		}
	}
	return kept
}

// unquotedCode is line without its comment and with its quoted strings
// blanked, so that what remains is what the parser reads as keys and
// unquoted values.
func unquotedCode(line string) string {
	b := []byte(line)
	var quote byte
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' && i+1 < len(b) {
				b[i], b[i+1] = ' ', ' '
				i++
				continue
			}
			if c == quote {
				quote = 0
			} else {
				b[i] = ' '
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' || c == '/' && i+1 < len(b) && b[i+1] == '/':
			return string(b[:i])
		}
	}
	return string(b)
}

// CheckVariables reports, all at once, the variables that lookup does not
// give (unset or empty) and those whose value the server's configuration
// parser would not read back as the same text (a password starting with a
// digit may be read as a number, a size or a date, or refused: "Expected a
// digit"; "true" is read as a boolean, and so on): the server itself
// stops at the first.
func CheckVariables(vars []Variable, lookup func(string) (string, bool)) error {
	var missing, unsafe []string
	for _, v := range vars {
		val, ok := lookup(v.Name)
		if !ok || val == "" {
			missing = append(missing, fmt.Sprintf("%s (%s)", v.Name, v.For()))
			continue
		}
		if !ReadsBack(val) {
			unsafe = append(unsafe, v.Name)
		}
	}
	var msgs []string
	if len(missing) > 0 {
		msgs = append(msgs, "not set in the environment: "+strings.Join(missing, ", "))
	}
	if len(unsafe) > 0 {
		msgs = append(msgs, fmt.Sprintf("the server's configuration parser would not read the value of %s as the same text "+
			"(one starting with a digit may be read as a number, a size or a date, and refused; true, no, spaces and commas are not read as text either): use letters and digits, starting with a letter",
			strings.Join(unsafe, ", ")))
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// ReadsBack reports whether the NATS server's configuration parser reads
// value, given in the environment for a $NAME reference, as that same
// text: the server parses such a value as it would the configuration's
// own.
func ReadsBack(value string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	m, err := conf.Parse("v=" + value)
	if err != nil {
		return false
	}
	s, isString := m["v"].(string)
	return isString && s == value
}

// Password returns a random password of 32 letters and digits (about 190
// bits) that starts with a letter, which the NATS server's configuration
// parser reads as it is (see ReadsBack).
func Password() string {
	const (
		letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		alnum   = letters + "0123456789"
	)
	out := make([]byte, 0, 32)
	var b [64]byte
	for len(out) < cap(out) {
		if _, err := rand.Read(b[:]); err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		for _, c := range b {
			set := alnum
			if len(out) == 0 {
				set = letters
			}
			// Bytes past the largest multiple of the set's size are
			// dropped, so that every character is equally likely.
			if int(c) >= 256/len(set)*len(set) || len(out) == cap(out) {
				continue
			}
			out = append(out, set[int(c)%len(set)])
		}
	}
	return string(out)
}
