package main

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/skillstream/skillstream/processor/embedded"
)

// The tenant deployment that ships (deploy/): tenants init reads its
// files from here when it is given none.
//
//go:embed deploy/tenants.conf deploy/tenants.yaml deploy/tenants-admin.yaml
var shippedDeploy embed.FS

func (a *app) natsServerCommand() (*command, runFunc) {
	var conf, storeDir, listen string
	cmd := newCommand("nats-server", "skillstream nats-server -c FILE [-sd DIR] [flags]", `Run a NATS server from a NATS server configuration file, as nats-server
-c FILE -sd DIR does: the nats-server library serve already embeds, at the
version of go.mod, so that a quick start needs nothing but skillstream. In
production run a real nats-server with the same file.

Before the server reads the file, every variable the file names ($NAME)
and does not define is checked at once: unset ones and values the server's
parser would not read back as the same text (a password starting with a
digit) are all named, where nats-server stops at the first. -sd replaces
the file's store_dir; without either it refuses to start rather than keep
the store in a temporary folder.`,
		"  skillstream nats-server -c cmd/skillstream/deploy/tenants.conf -sd ./nats-data")
	cmd.localString(&conf, "c", "", "the NATS server configuration `file`")
	cmd.localString(&storeDir, "sd", "", "the JetStream store `dir`ectory (replaces the file's store_dir)")
	cmd.cfgString(&listen, "listen", "", "the client `addr`ess, host:port (replaces the file's listen)")
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("nats-server takes no arguments, got %q", args[0])
		}
		if conf == "" {
			return usagef("nats-server needs -c FILE, the NATS server configuration")
		}
		log := slog.New(slog.NewTextHandler(a.stderr, nil))
		srv, err := embedded.StartConfig(conf, storeDir, listen, a.lookupEnv, log)
		if err != nil {
			return err
		}
		defer func() {
			srv.Shutdown()
			srv.WaitForShutdown()
		}()
		store := storeDir
		if js := srv.JetStreamConfig(); js != nil {
			store = js.StoreDir
		}
		log.Info("nats-server listening", "url", srv.ClientURL(), "config", conf, "store", store)
		<-ctx.Done()
		return nil
	}
}

func (a *app) tenantsCommand() (*command, runFunc) {
	var natsURL string
	cmd := newCommand("tenants", "skillstream tenants init DIR [FILE...]", `  init DIR [FILE...]
      write DIR/tenants.env (mode 0600): a random password for every
      variable the NATS server configuration names, every variable the
      tenants files name (the MCP tokens, used with serve --mcp-listen
      only), and SKILLSTREAM_NATS_URL and SKILLSTREAM_URL, where the
      commands and the example workers connect; then print what each is
      for. The FILEs are the configuration (*.conf) and tenants files
      (*.yaml) to read; by default the ones that ship in
      cmd/skillstream/deploy (tenants.conf, tenants.yaml,
      tenants-admin.yaml). The passwords are letters and digits starting
      with a letter, which the server's parser reads as they are. An
      existing env file is never replaced.

Load the file in each shell that runs a command of the deployment:
set -a; . DIR/tenants.env; set +a`,
		"  skillstream tenants init ./quickstart\n  set -a; . ./quickstart/tenants.env; set +a")
	cmd.cfgString(&natsURL, "nats-url", "nats://127.0.0.1:4222", "the NATS server's `url`, written as SKILLSTREAM_NATS_URL and SKILLSTREAM_URL")
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) == 0 || args[0] != "init" {
			return usagef("tenants: want the action init (tenants init DIR)")
		}
		if len(args) < 2 {
			return usagef("tenants init needs DIR, the folder to write tenants.env in")
		}
		return a.tenantsInit(args[1], args[2:], natsURL)
	}
}

// envVar is one variable of the env file tenants init writes.
type envVar struct{ name, value, about string }

// tenantsInit writes dir/tenants.env for the files (the shipped ones when
// none) and prints what each variable is for.
func (a *app) tenantsInit(dir string, files []string, natsURL string) error {
	type source struct {
		name string
		text []byte
	}
	var sources []source
	if len(files) == 0 {
		for _, f := range []string{"deploy/tenants.conf", "deploy/tenants.yaml", "deploy/tenants-admin.yaml"} {
			b, err := fs.ReadFile(shippedDeploy, f)
			if err != nil {
				return err
			}
			sources = append(sources, source{"cmd/skillstream/" + f, b})
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return inputf("tenants init: %v", err)
		}
		sources = append(sources, source{f, b})
	}
	vars := []envVar{
		{"SKILLSTREAM_NATS_URL", natsURL, "where every skillstream command connects (their --nats-url)"},
		{"SKILLSTREAM_URL", natsURL, "where the example workers connect"},
	}
	seen := map[string]bool{"SKILLSTREAM_NATS_URL": true, "SKILLSTREAM_URL": true}
	add := func(name, about string) {
		if !seen[name] {
			seen[name] = true
			vars = append(vars, envVar{name, embedded.Password(), about})
		}
	}
	for _, s := range sources {
		switch {
		case strings.HasSuffix(s.name, ".conf"):
			for _, v := range embedded.Variables(string(s.text)) {
				add(v.Name, v.For())
			}
		case strings.HasSuffix(s.name, ".yaml") || strings.HasSuffix(s.name, ".yml"):
			var f tenantsFile
			if err := yaml.NewDecoder(bytes.NewReader(s.text)).Decode(&f); err != nil {
				return inputf("tenants init: %s: %v", s.name, err)
			}
			auth := func(who string, t tenantAuth) {
				if t.PasswordEnv != "" {
					add(t.PasswordEnv, fmt.Sprintf("password of user %s (%s)", t.User, who))
				}
				if t.TokenEnv != "" {
					add(t.TokenEnv, "token of "+who)
				}
			}
			if f.Library != nil {
				auth("the library", *f.Library)
			}
			if f.Audit != nil {
				auth("the audit service", *f.Audit)
			}
			for _, t := range f.Tenants {
				auth("tenant "+t.Name, t.tenantAuth)
				if t.MCPTokenEnv != "" {
					add(t.MCPTokenEnv, fmt.Sprintf("bearer token of tenant %s's MCP hosts (serve --mcp-listen only)", t.Name))
				}
				if t.ConsoleTokenEnv != "" {
					add(t.ConsoleTokenEnv, fmt.Sprintf("viewer token of tenant %s's operator console (serve --console-listen only)", t.Name))
				}
				if t.ConsoleOperatorTokenEnv != "" {
					add(t.ConsoleOperatorTokenEnv, fmt.Sprintf("operator token of tenant %s's operator console (serve --console-listen only)", t.Name))
				}
			}
		default:
			return usagef("tenants init: %s: want a NATS server configuration (.conf) or a tenants file (.yaml)", s.name)
		}
	}

	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	path := filepath.Join(dir, "tenants.env")
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by skillstream tenants init. Load it with: set -a; . %s; set +a\n", path)
	for _, v := range vars {
		fmt.Fprintf(&b, "# %s\n%s=%s\n", v.about, v.name, v.value)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("tenants init: %s exists: it is never replaced (remove it to make new passwords)", path)
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "wrote %s (mode 0600); load it with: set -a; . %s; set +a\n", path, path)
	width := 0
	for _, v := range vars {
		width = max(width, len(v.name))
	}
	for _, v := range vars {
		fmt.Fprintf(a.stdout, "  %-*s  %s\n", width, v.name, v.about)
	}
	return nil
}
