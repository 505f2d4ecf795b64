package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/skillstream/skillstream/natstest"
)

// TestWorkerHelp: -h, -help and --help print the usage on stdout and exit
// 0 without connecting: the NATS server $SKILLSTREAM_URL names sees no
// connection. An unknown flag is a usage error (exit 2) on stderr.
func TestWorkerHelp(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	env := func(k string) string {
		if k == "SKILLSTREAM_URL" {
			return srv.ClientURL()
		}
		return ""
	}
	connections := func() uint64 {
		t.Helper()
		v, err := srv.Varz(&server.VarzOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return v.TotalConnections
	}
	before := connections() // natstest's own
	for _, arg := range []string{"-h", "-help", "--help"} {
		var out, errOut bytes.Buffer
		code := cli(context.Background(), []string{arg}, env, &out, &errOut)
		if code != 0 || !strings.HasPrefix(out.String(), "usage: worker [PROJECT_DIR]\n") ||
			!strings.Contains(out.String(), "$SKILLSTREAM_URL") || errOut.Len() != 0 {
			t.Errorf("worker %s: exit %d\nstdout:\n%s\nstderr:\n%s", arg, code, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := cli(context.Background(), []string{"--verbose"}, env, &out, &errOut); code != 2 || out.Len() != 0 ||
		!strings.Contains(errOut.String(), "-verbose") || !strings.Contains(errOut.String(), "usage: worker [PROJECT_DIR]") {
		t.Errorf("worker --verbose: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if n := connections() - before; n != 0 {
		t.Errorf("the server saw %d connections: asking for help connected", n)
	}
}
