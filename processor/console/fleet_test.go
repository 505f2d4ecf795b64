package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/console"
)

// TestFleetHostileMembers: what members say of themselves is another
// process's text: the fleet page shows it escaped and bounded, skips an
// answer naming no valid instance, and says which members diverge.
func TestFleetHostileMembers(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect()
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	member := func(instance, build, digest string) {
		svc, err := micro.AddService(nc, micro.Config{Name: processor.ServiceName, Version: "1.0.0",
			Metadata: map[string]string{"instance": instance, "build": build, "stream": "SESSIONS", "consumer": "skillstream", "store": "SKILLS"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Stop() })
		if !events.ValidInstance(instance) {
			return
		}
		err = svc.AddEndpoint("view", micro.HandlerFunc(func(r micro.Request) {
			b, _ := json.Marshal(events.ViewReply{V: events.Version, Instance: instance, Complete: true, Digest: digest, Revision: 7, Store: "SKILLS"})
			_ = r.Respond(b)
		}), micro.WithEndpointSubject(events.ViewSubject(instance)))
		if err != nil {
			t.Fatal(err)
		}
	}
	member("good-1", "v1.2.3", "aaaaaaaaaaaaaaaa")
	member("evil-1", `<script>alert(1)</script>`+strings.Repeat("x", 500), `"><img src=x onerror=alert(2)>`)
	member("not an instance <b>", "v0", "")

	// A generous wait: the members answer at once, the page waits it out.
	ts := startConsole(t, console.Config{Sources: console.Sources{JS: js, Stream: "SESSIONS", Fleet: console.FleetSources{Wait: 2 * time.Second}}})
	c := client(t)
	signIn(t, c, ts.URL, viewerToken)
	res, err := c.Get(ts.URL + "/fleet")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	body := string(b)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("fleet: %s\n%s", res.Status, body)
	}
	for _, bad := range []string{"<script>alert", "<img src=x", "not an instance", strings.Repeat("x", 250)} {
		if strings.Contains(body, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	for _, want := range []string{"good-1", "evil-1", "&lt;script&gt;alert(1)&lt;/script&gt;", "2 members answer", "they decide 2 different catalogs",
		"stream SESSIONS does not exist yet", "no usage projection configured"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
}

// TestMuxTenants: the tenants' consoles each under their path, made once
// their sources are there; the root and unknown tenants name nothing.
func TestMuxTenants(t *testing.T) {
	ready := false
	mk := func(name string) console.Tenant {
		return console.Tenant{Name: name, Make: func() (*console.Server, bool, error) {
			if !ready {
				return nil, false, nil
			}
			s, err := console.New(console.Config{Tenant: name, Base: "/" + name + "/", ViewerToken: name + "-viewer-token-0123456789"})
			return s, err == nil, err
		}}
	}
	m := console.NewMux([]console.Tenant{mk("acme"), mk("globex")})
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", "http://127.0.0.1"+path, nil)
		w := httptest.NewRecorder()
		m.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	if code, body := get("/acme/login"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not served yet") {
		t.Errorf("before the start: %d %s", code, body)
	}
	ready = true
	if code, body := get("/acme/login"); code != http.StatusOK || !strings.Contains(body, "acme") {
		t.Errorf("acme's login: %d %s", code, body)
	}
	if code, _ := get("/acme"); code != http.StatusSeeOther {
		t.Errorf("/acme: %d", code)
	}
	for _, p := range []string{"/", "/initech/login", "/acmeglobex/"} {
		if code, body := get(p); code != http.StatusNotFound || strings.Contains(body, "acme") || strings.Contains(body, "globex") {
			t.Errorf("%s: %d %s", p, code, body)
		}
	}
}
