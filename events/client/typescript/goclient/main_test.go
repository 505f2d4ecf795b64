package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/natstest"
)

// TestRunGarbage: requests goclient cannot read fail with a clear error
// naming the line; requests the client refuses come back as an error
// reply, one line each, nothing sent.
func TestRunGarbage(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	c, err := client.New(srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var out bytes.Buffer
	err = runRequests(c, strings.NewReader("{not json\n"), &out)
	if err == nil || !strings.Contains(err.Error(), "{not json") {
		t.Fatalf("garbage line: %v; want an error naming it", err)
	}

	out.Reset()
	in := `{"op":"fly","payload":{}}` + "\n" +
		`{"op":"preStep","payload":{"session":"bad session","step":"1","tools":[]}}` + "\n" +
		`{"op":"callSkill","payload":{"session":"s","call":"","args":{"name":"x"}}}` + "\n" +
		`{"op":"compact","payload":{"session":"a.b","retainFrom":1}}` + "\n"
	if err := runRequests(c, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d replies, want 4:\n%s", len(lines), out.String())
	}
	for i, want := range []string{`unknown op "fly"`, "session", "call", "session"} {
		var r reply
		if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Error, want) || r.Answer != nil {
			t.Errorf("reply %d: %+v; want an error mentioning %q", i, r, want)
		}
	}

	if err := run([]string{"-url", srv.URL()}, strings.NewReader(""), &out); err == nil || !strings.Contains(err.Error(), "command") {
		t.Errorf("no command: %v; want an error asking for one", err)
	}
}

// TestNatsd: natsd serves the configuration file's users on the URL it
// prints, and stops when its input closes.
func TestNatsd(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte("authorization { users: [ { user: u, password: p, permissions: { publish: [\"ok\"] } } ] }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"natsd", "-config", conf, "-store", filepath.Join(dir, "js")}, inR, outW)
		outW.Close()
	}()
	line, err := bufio.NewReader(outR).ReadBytes('\n')
	if err != nil {
		t.Fatalf("natsd printed nothing: %v, %v", err, <-done)
	}
	var got struct{ URL string }
	if err := json.Unmarshal(line, &got); err != nil || !strings.HasPrefix(got.URL, "nats://127.0.0.1:") {
		t.Fatalf("natsd printed %q: %v", line, err)
	}
	if _, err := nats.Connect(got.URL, nats.UserInfo("u", "wrong")); err == nil {
		t.Error("a wrong password was taken")
	}
	nc, err := nats.Connect(got.URL, nats.UserInfo("u", "p"))
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("natsd: %v", err)
	}
}
