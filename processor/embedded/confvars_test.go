package embedded

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// shippedTenantsConf is the multi-tenant NATS configuration that ships.
const shippedTenantsConf = "../../cmd/skillstream/deploy/tenants.conf"

// shippedVariables are the variables it takes from the environment.
var shippedVariables = map[string]string{
	"SKILLSTREAM_LIBRARY_READER_PASSWORD": "library-reader",
	"SKILLSTREAM_CURATOR_PASSWORD":        "curator",
	"SKILLSTREAM_AUDITOR_PASSWORD":        "auditor",
	"ACME_PROCESSOR_PASSWORD":             "acme-processor",
	"ACME_ADMIN_PASSWORD":                 "acme-admin",
	"ACME_WORKER_1_PASSWORD":              "acme-worker-1",
	"ACME_WORKER_2_PASSWORD":              "acme-worker-2",
	"GLOBEX_PROCESSOR_PASSWORD":           "globex-processor",
	"GLOBEX_ADMIN_PASSWORD":               "globex-admin",
	"GLOBEX_WORKER_1_PASSWORD":            "globex-worker-1",
	"GLOBEX_WORKER_2_PASSWORD":            "globex-worker-2",
}

func readConf(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(shippedTenantsConf)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestVariablesOfTheShippedConf: every password variable of the shipped
// file, each with its user; not the variables the file defines itself
// (PROCESSOR_PERMISSIONS, ...), nor a $ in a comment or a quoted string.
func TestVariablesOfTheShippedConf(t *testing.T) {
	got := map[string]string{}
	for _, v := range Variables(readConf(t)) {
		got[v.Name] = v.User
		if !strings.HasPrefix(v.For(), "password of user "+v.User+" (account ") {
			t.Errorf("%s: for %q", v.Name, v.For())
		}
	}
	if len(got) != len(shippedVariables) {
		t.Errorf("got %d variables %v, want %d", len(got), got, len(shippedVariables))
	}
	for name, user := range shippedVariables {
		if got[name] != user {
			t.Errorf("%s: user %q, want %q", name, got[name], user)
		}
	}
	vars := Variables("# $IN_COMMENT\nA = 1\nb: $A\nc: \"$QUOTED\" // $ALSO_COMMENT\nd: 'x$Y'\ne: $FROM_ENV\n")
	if len(vars) != 1 || vars[0].Name != "FROM_ENV" || vars[0].Line != 6 {
		t.Errorf("got %+v, want only FROM_ENV on line 6", vars)
	}
}

// TestCheckVariablesAllAtOnce: every unset variable is named in one error,
// with its user, and so is every value the server's parser would not read
// back (the server stops at the first, and reads a password starting
// with a digit as a number: "Expected a digit").
func TestCheckVariablesAllAtOnce(t *testing.T) {
	vars := Variables(readConf(t))
	env := map[string]string{}
	for name := range shippedVariables {
		env[name] = Password()
	}
	delete(env, "ACME_ADMIN_PASSWORD")
	delete(env, "GLOBEX_WORKER_2_PASSWORD")
	env["ACME_WORKER_1_PASSWORD"] = "4096"
	env["GLOBEX_ADMIN_PASSWORD"] = "true"
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	err := CheckVariables(vars, lookup)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"ACME_ADMIN_PASSWORD (password of user acme-admin (account ACME))",
		"GLOBEX_WORKER_2_PASSWORD (password of user globex-worker-2",
		"ACME_WORKER_1_PASSWORD, GLOBEX_ADMIN_PASSWORD",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	for _, ok := range []string{"abc", "Ab3", "x-y_z.w", "4abc"} {
		if !ReadsBack(ok) {
			t.Errorf("ReadsBack(%q) = false", ok)
		}
	}
	for _, bad := range []string{"1234", "4k", "12-3ab", "3.", "true", "no", "a b", "a,b", "a}b", "$X"} {
		if ReadsBack(bad) {
			t.Errorf("ReadsBack(%q) = true", bad)
		}
	}
	for range 200 {
		if p := Password(); len(p) != 32 || !ReadsBack(p) || p[0] >= '0' && p[0] <= '9' {
			t.Fatalf("Password() = %q", p)
		}
	}
}

// TestStartConfig: the shipped file as it is, with generated passwords and
// -sd, is a running server its users connect to; without a store
// directory, with a variable unset, or with a store the process cannot
// create, it refuses to start and says why.
func TestStartConfig(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	env := map[string]string{}
	for name := range shippedVariables {
		env[name] = Password()
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for name, v := range env {
		t.Setenv(name, v) // the server's own parser reads the environment
	}

	if _, err := StartConfig(shippedTenantsConf, "", "127.0.0.1:0", lookup, quiet); err == nil || !strings.Contains(err.Error(), "-sd DIR") {
		t.Errorf("no store directory: %v", err)
	}
	missing := func(k string) (string, bool) {
		if k == "ACME_PROCESSOR_PASSWORD" || k == "GLOBEX_PROCESSOR_PASSWORD" {
			return "", false
		}
		return lookup(k)
	}
	if _, err := StartConfig(shippedTenantsConf, t.TempDir(), "127.0.0.1:0", missing, quiet); err == nil ||
		!strings.Contains(err.Error(), "ACME_PROCESSOR_PASSWORD") || !strings.Contains(err.Error(), "GLOBEX_PROCESSOR_PASSWORD") {
		t.Errorf("two variables unset: %v", err)
	}
	// A store under a regular file cannot be created, by root or anyone.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := StartConfig(shippedTenantsConf, filepath.Join(file, "nats"), "127.0.0.1:0", lookup, quiet); err == nil || !strings.Contains(err.Error(), "JetStream") {
		t.Errorf("a store that cannot be created: %v", err)
	}

	store := t.TempDir()
	srv, err := StartConfig(shippedTenantsConf, store, "127.0.0.1:0", lookup, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if got := srv.JetStreamConfig().StoreDir; !strings.HasPrefix(got, store) {
		t.Errorf("store %s, want under %s", got, store)
	}
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo("acme-admin", env["ACME_ADMIN_PASSWORD"]))
	if err != nil {
		t.Fatalf("acme-admin: %v", err)
	}
	nc.Close()
}
