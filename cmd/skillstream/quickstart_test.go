package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/processor/embedded"
)

// quickStartLine is one command line of the manual's tenant quick start.
type quickStartLine struct {
	text     string // as shown, without its comment
	exit     int    // the exit status its comment announces ("# exit 1: ..."), else 0
	ran      bool
	code     int
	out, err string
}

// quickStartLines returns the command lines of the sh blocks of the
// manual's "Tenant quick start" section, in order.
func quickStartLines(t *testing.T) []*quickStartLine {
	t.Helper()
	manual := readDoc(t, "cmd/skillstream/MANUAL.md")
	start := strings.Index(manual, "\n### Tenant quick start\n")
	if start < 0 {
		t.Fatal(`the manual has no "Tenant quick start" section`)
	}
	section := manual[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	exitRE := regexp.MustCompile(`#\s*exit (\d+)`)
	var out []*quickStartLine
	for _, b := range blocks(section, "sh") {
		for _, raw := range strings.Split(b, "\n") {
			line := strings.TrimSpace(raw)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			l := &quickStartLine{text: line}
			if i := strings.Index(line, " #"); i >= 0 {
				if m := exitRE.FindStringSubmatch(line[i:]); m != nil {
					l.exit, _ = strconv.Atoi(m[1])
				}
				l.text = strings.TrimSpace(line[:i])
			}
			out = append(out, l)
		}
	}
	return out
}

// TestTenantQuickStart runs the manual's tenant quick start as written, in
// a folder holding the repository's files (cmd, events, go.mod), with
// nothing set in the environment but where its NATS server listens (a
// free port, given as SKILLSTREAM_NATS_URL when the env file is written,
// and to skillstream nats-server as SKILLSTREAM_LISTEN, which replaces the
// shipped file's 127.0.0.1:4222) and the user skills folder: the shipped
// files as they are, a real NATS server loaded from tenants.conf, a real
// serve for both tenants and the library, a push by acme's administrator
// and the curator, a push refused at once, and a worker of each tenant
// answered with its own tenant's skills and the library's. skillstream
// lines run in-process (Main), the others in sh; the TypeScript worker
// runs when its dependencies are installed (npm ci).
func TestTenantQuickStart(t *testing.T) {
	lines := quickStartLines(t)
	root := t.TempDir()
	for _, f := range []string{"cmd", "events", "go.mod", "go.sum"} {
		if err := os.Symlink(filepath.Join(repoRoot, f), filepath.Join(root, f)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(root)
	port := freePort(t)
	t.Setenv("SKILLSTREAM_NATS_URL", fmt.Sprintf("nats://127.0.0.1:%d", port))
	t.Setenv("SKILLSTREAM_LISTEN", fmt.Sprintf("127.0.0.1:%d", port))
	t.Setenv("SKILLSTREAM_USER_SKILLS_DIR", t.TempDir())
	for _, v := range []string{"SKILLSTREAM_URL", "SKILLSTREAM_USER", "SKILLSTREAM_PASSWORD"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	npm := ""
	if _, err := os.Stat(filepath.Join(repoRoot, "events/client/typescript/node_modules")); err == nil {
		npm, _ = exec.LookPath("npm")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	envLine := regexp.MustCompile(`^set -a; \. (\S+); set \+a$`)
	for _, l := range lines {
		switch args, isSkillstream := skillstreamArgs(strings.TrimSuffix(l.text, " &")); {
		case l.text == "go build -o skillstream ./cmd/skillstream":
			t.Logf("%s: skillstream runs in-process (Main)", l.text)
		case envLine.MatchString(l.text):
			loadEnvFile(t, envLine.FindStringSubmatch(l.text)[1])
			l.ran = true
		case isSkillstream && strings.HasSuffix(l.text, " &"):
			ready := map[string]string{"nats-server": "nats-server listening", "serve": "skillstream serving"}[args[0]]
			if ready == "" {
				t.Fatalf("%s: which line says it is ready?", l.text)
			}
			background(t, l.text, args, ready)
			l.ran = true
		case isSkillstream:
			var stdout, stderr syncBuffer
			a := &app{stdout: &stdout, stderr: &stderr, lookupEnv: os.LookupEnv}
			l.code = a.main(ctx, args)
			l.out, l.err, l.ran = stdout.String(), stderr.String(), true
		case strings.Contains(l.text, "npm ") && npm == "":
			t.Logf("%s: skipped, the TypeScript client's dependencies are not installed (npm ci in events/client/typescript)", l.text)
		case strings.HasPrefix(l.text, "npm ") && strings.HasSuffix(l.text, " ci"):
			t.Logf("%s: skipped, installed already", l.text)
		default:
			cmd := exec.CommandContext(ctx, "sh", "-c", l.text)
			cmd.Dir = root
			var stdout, stderr syncBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			l.code = cmd.ProcessState.ExitCode()
			if err != nil && l.code == 0 {
				l.code = -1
			}
			l.out, l.err, l.ran = stdout.String(), stderr.String(), true
		}
		if l.ran {
			t.Logf("%s: exit %d\n%s%s", l.text, l.code, l.out, l.err)
		}
		if l.ran && l.code != l.exit {
			t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", l.text, l.code, l.exit, l.out, l.err)
		}
	}

	find := func(prefix string) *quickStartLine {
		t.Helper()
		for _, l := range lines {
			if strings.HasPrefix(l.text, prefix) {
				return l
			}
		}
		t.Fatalf("the quick start has no line starting %q", prefix)
		return nil
	}
	init := find("./skillstream tenants init ")
	for _, v := range tenantUsers {
		if !strings.Contains(init.out, v) {
			t.Errorf("tenants init does not list %s:\n%s", v, init.out)
		}
	}
	if l := find("./skillstream skills push quickstart/acme --tenants cmd/skillstream/deploy/tenants-admin.yaml"); !strings.Contains(l.out, "added release-notes") {
		t.Errorf("acme's administrator's push: %s%s", l.out, l.err)
	}
	if l := find("./skillstream skills push quickstart/library --tenants cmd/skillstream/deploy/tenants-admin.yaml"); !strings.Contains(l.out, "added house-style") {
		t.Errorf("the curator's push: %s%s", l.out, l.err)
	}
	refused := find("./skillstream skills push quickstart/library --tenants cmd/skillstream/deploy/tenants.yaml")
	for _, want := range []string{"the NATS server refused it", "Permissions Violation for Publish to", "user acme-processor may not do this"} {
		if !strings.Contains(refused.err, want) {
			t.Errorf("the refused push does not say %q:\n%s", want, refused.err)
		}
	}
	if strings.Contains(refused.err, "NATS asynchronous error") {
		t.Errorf("the refused push logs the refusal besides saying it:\n%s", refused.err)
	}
	if strings.Contains(refused.err, "timeout") {
		t.Errorf("the refused push waited for an acknowledgement:\n%s", refused.err)
	}
	workers := []struct {
		prefix    string
		see, miss []string
	}{
		{"SKILLSTREAM_USER=acme-worker-1 ", []string{"- `release-notes`", "- `house-style`"}, nil},
		{"SKILLSTREAM_USER=globex-worker-1 ", []string{"- `house-style`"}, []string{"release-notes"}},
	}
	for _, w := range workers {
		l := find(w.prefix)
		if !l.ran {
			continue
		}
		if !strings.Contains(l.out, "pre-step: appended") {
			t.Errorf("%s: not answered:\n%s%s", l.text, l.out, l.err)
		}
		for _, s := range w.see {
			if !strings.Contains(l.out, s) {
				t.Errorf("%s: the catalog lacks %s:\n%s", l.text, s, l.out)
			}
		}
		for _, s := range w.miss {
			if strings.Contains(l.out, s) {
				t.Errorf("%s: the catalog shows %s, another tenant's skill:\n%s", l.text, s, l.out)
			}
		}
	}
}

// loadEnvFile sets the variables of an env file tenants init wrote, as
// `set -a; . FILE; set +a` does, until the test ends.
func loadEnvFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: not a variable: %q", path, line)
		}
		t.Setenv(k, v)
		n++
	}
	if err := sc.Err(); err != nil || n == 0 {
		t.Fatalf("%s: %d variables, %v", path, n, err)
	}
}

// background runs a long-running skillstream command line (one the quick
// start leaves running with &) until the test ends, and waits until its
// log says ready; at the end it must exit 0.
func background(t *testing.T, line string, args []string, ready string) {
	t.Helper()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		a := &app{stdout: logs, stderr: logs, lookupEnv: os.LookupEnv}
		done <- a.main(ctx, args)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("%s: exit %d:\n%s", line, code, logs)
		}
	})
	eventually(t, 60*time.Second, line, func() error {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("%s: exit %d:\n%s", line, code, logs)
		default:
		}
		if !strings.Contains(logs.String(), ready) {
			return fmt.Errorf("not yet %q:\n%s", ready, logs)
		}
		return nil
	})
}

// TestTenantsSecretsNeeded: each command needs the secrets it uses, and
// names every one missing at once, with the file, rather than pointing at
// --help: serve needs no MCP token without --mcp-listen, and an
// administrator's command only the password of the entry it acts for.
func TestTenantsSecretsNeeded(t *testing.T) {
	natsURL, _ := tenantServer(t)
	yaml := tenantsYAMLPath(t)
	adminYAML, err := filepath.Abs("deploy/tenants-admin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("ACME_MCP_TOKEN", "")
	t.Setenv("GLOBEX_MCP_TOKEN", "")
	startTenantServe(t, natsURL)

	code, _, stderr := runMain(t, "serve", "--nats-url", natsURL, "--tenants", yaml, "--mcp-listen", "127.0.0.1:0")
	for _, want := range []string{yaml, "ACME_MCP_TOKEN (tenant acme's mcp_token_env, for --mcp-listen)", "GLOBEX_MCP_TOKEN (tenant globex's mcp_token_env"} {
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("serve --mcp-listen without the tokens: exit %d, want %d and %q:\n%s", code, exitUsage, want, stderr)
		}
	}
	if strings.Contains(stderr, "--help") {
		t.Errorf("the error points at --help, which does not name the variables:\n%s", stderr)
	}

	// An administrator's command: only its own entry's password.
	t.Setenv("GLOBEX_ADMIN_PASSWORD", "")
	t.Setenv("SKILLSTREAM_CURATOR_PASSWORD", "")
	if code, stdout, stderr := runMain(t, "skills", "ls", "--nats-url", natsURL, "--tenants", adminYAML, "--tenant", "acme"); code != exitOK {
		t.Errorf("acme's administrator, the others' passwords unset: exit %d\n%s%s", code, stdout, stderr)
	}
	code, _, stderr = runMain(t, "skills", "ls", "--nats-url", natsURL, "--tenants", adminYAML, "--tenant", "globex")
	if code != exitUsage || !strings.Contains(stderr, "GLOBEX_ADMIN_PASSWORD (tenant globex's password_env)") || strings.Contains(stderr, "ACME_ADMIN_PASSWORD") {
		t.Errorf("globex's administrator without its password: exit %d\n%s", code, stderr)
	}

	// serve: every missing password at once.
	t.Setenv("ACME_PROCESSOR_PASSWORD", "")
	t.Setenv("SKILLSTREAM_LIBRARY_READER_PASSWORD", "")
	code, _, stderr = runMain(t, "serve", "--nats-url", natsURL, "--tenants", yaml)
	for _, want := range []string{"ACME_PROCESSOR_PASSWORD (tenant acme's password_env)", "SKILLSTREAM_LIBRARY_READER_PASSWORD (the library's password_env)", "skillstream tenants init"} {
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("serve without two passwords: exit %d, want %d and %q:\n%s", code, exitUsage, want, stderr)
		}
	}
}

// TestNATSServerAsPlainUser: step 3 of the quick start run by a user who
// is not root (nobody, through setpriv, which needs root to run): with
// the shipped file and -sd in a folder of the user's, the server starts;
// with the store_dir the file used to name (/var/lib/nats), it cannot
// create its store and says why. The step is this test binary, run again
// as that user.
func TestNATSServerAsPlainUser(t *testing.T) {
	if args := os.Getenv("SKILLSTREAM_TEST_PLAIN_USER_STEP"); args != "" {
		plainUserStep(t, strings.Fields(args))
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("running a command as another user needs root")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "skillstream-plain-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(tenantsConf)
	if err != nil {
		t.Fatal(err)
	}
	oldConf := strings.Replace(string(conf), "\njetstream {}\n", "\njetstream {\n  store_dir: /var/lib/nats\n}\n", 1)
	if oldConf == string(conf) {
		t.Fatal("the shipped file has no `jetstream {}` line to put the old store_dir in")
	}
	for name, data := range map[string]string{"cmd.test": string(bin), "tenants.conf": string(conf), "old.conf": oldConf} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	for _, v := range tenantUsers {
		env = append(env, v+"=p"+randomToken(t))
	}
	asNobody := func(step string) (string, error) {
		cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
			filepath.Join(dir, "cmd.test"), "-test.run=^TestNATSServerAsPlainUser$", "-test.v")
		cmd.Dir = home
		cmd.Env = append(env, "SKILLSTREAM_TEST_PLAIN_USER_STEP="+step)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := asNobody("-c " + filepath.Join(dir, "tenants.conf") + " -sd quickstart/nats")
	if err != nil || !strings.Contains(out, "nats-server listening") || !strings.Contains(out, "--- PASS") {
		t.Errorf("as nobody, the shipped file with -sd: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(home, "quickstart", "nats", "jetstream")); err != nil {
		t.Errorf("the store was not made in nobody's folder: %v", err)
	}
	t.Logf("as nobody, the shipped file with -sd:\n%s", out)
	out, err = asNobody("-c " + filepath.Join(dir, "old.conf") + " want-failure")
	if err != nil || !strings.Contains(out, "permission denied") {
		t.Errorf("as nobody, the old store_dir: %v\n%s", err, out)
	}
}

// plainUserStep is TestNATSServerAsPlainUser's step, run as the plain
// user: skillstream nats-server with args until it serves (or, with
// want-failure last, until it fails).
func plainUserStep(t *testing.T, args []string) {
	wantFailure := args[len(args)-1] == "want-failure"
	if wantFailure {
		args = args[:len(args)-1]
	}
	t.Setenv("SKILLSTREAM_LISTEN", "127.0.0.1:0")
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		a := &app{stdout: logs, stderr: logs, lookupEnv: os.LookupEnv}
		done <- a.main(ctx, append([]string{"nats-server"}, args...))
	}()
	if wantFailure {
		if code := <-done; code == exitOK {
			t.Fatalf("started:\n%s", logs)
		}
		t.Logf("refused, as expected:\n%s", logs)
		return
	}
	eventually(t, 30*time.Second, "nats-server listening", func() error {
		select {
		case code := <-done:
			t.Fatalf("exit %d:\n%s", code, logs)
		default:
		}
		if !strings.Contains(logs.String(), "nats-server listening") {
			return fmt.Errorf("not yet:\n%s", logs)
		}
		return nil
	})
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d:\n%s", code, logs)
	}
	t.Logf("%s", logs)
}

// TestTenantsInit: the env file holds every variable of the shipped files,
// is readable by its owner only, holds passwords the NATS configuration
// parser reads back, and is never replaced; files given instead of the
// shipped ones are read, and what is neither a configuration nor a
// tenants file is refused.
func TestTenantsInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "qs")
	t.Setenv("SKILLSTREAM_NATS_URL", "")
	code, stdout, stderr := runMain(t, "tenants", "init", dir)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	path := filepath.Join(dir, "tenants.env")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, mode %v", path, err, fi.Mode())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			vars[k] = v
		}
	}
	for _, v := range append(mapValues(tenantUsers), "ACME_MCP_TOKEN", "GLOBEX_MCP_TOKEN", "ACME_CONSOLE_TOKEN", "ACME_CONSOLE_OPERATOR_TOKEN", "GLOBEX_CONSOLE_TOKEN", "GLOBEX_CONSOLE_OPERATOR_TOKEN") {
		if !embedded.ReadsBack(vars[v]) || len(vars[v]) < 32 {
			t.Errorf("%s=%q", v, vars[v])
		}
		if !strings.Contains(stdout, v) {
			t.Errorf("the output does not say what %s is for:\n%s", v, stdout)
		}
	}
	if vars["SKILLSTREAM_NATS_URL"] != "nats://127.0.0.1:4222" || vars["SKILLSTREAM_URL"] != "nats://127.0.0.1:4222" {
		t.Errorf("addresses: %q, %q", vars["SKILLSTREAM_NATS_URL"], vars["SKILLSTREAM_URL"])
	}
	if code, _, stderr := runMain(t, "tenants", "init", dir); code != exitFailure || !strings.Contains(stderr, path+" exists") {
		t.Errorf("a second init: exit %d\n%s", code, stderr)
	}
	if after, _ := os.ReadFile(path); string(after) != string(b) {
		t.Error("a second init changed the env file")
	}

	conf := filepath.Join(t.TempDir(), "one.conf")
	if err := os.WriteFile(conf, []byte("accounts {\n  A {\n    users: [{user: u, password: $ONLY_ONE}]\n  }\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	code, stdout, stderr = runMain(t, "tenants", "init", "--nats-url", "nats://10.0.0.1:4222", other, conf)
	got, _ := os.ReadFile(filepath.Join(other, "tenants.env"))
	if code != exitOK || !strings.Contains(string(got), "\nONLY_ONE=") || strings.Contains(string(got), "ACME") ||
		!strings.Contains(string(got), "SKILLSTREAM_NATS_URL=nats://10.0.0.1:4222\n") || !strings.Contains(stdout, "password of user u (account A)") {
		t.Errorf("init with a file of its own: exit %d\n%s%s\n%s", code, stdout, stderr, got)
	}
	for _, args := range [][]string{{"tenants"}, {"tenants", "init"}, {"tenants", "frob", "x"}, {"tenants", "init", t.TempDir(), "MANUAL.md"}} {
		if code, _, stderr := runMain(t, args...); code != exitUsage {
			t.Errorf("%q: exit %d\n%s", args, code, stderr)
		}
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
