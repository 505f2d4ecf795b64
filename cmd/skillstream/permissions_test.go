package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/store"
)

// permissionsFile is the NATS server configuration shipped for untrusted
// workers; the test below loads it as it is.
const permissionsFile = "deploy/nats-server.conf"

// permServer starts a real NATS server from permissionsFile, with only
// its store folder and port replaced, and returns its URL and the users'
// passwords.
func permServer(t *testing.T) (string, map[string]string) {
	t.Helper()
	pw := setPasswords(t, map[string]string{
		"processor": "SKILLSTREAM_PROCESSOR_PASSWORD",
		"operator":  "SKILLSTREAM_OPERATOR_PASSWORD",
		"worker-a":  "SKILLSTREAM_WORKER_A_PASSWORD",
		"worker-b":  "SKILLSTREAM_WORKER_B_PASSWORD",
	})
	return confServer(t, permissionsFile), pw
}

// setPasswords gives each user of envByUser a random password, set in the
// environment variable the configuration file reads it from, and returns
// them by user.
func setPasswords(t testing.TB, envByUser map[string]string) map[string]string {
	t.Helper()
	pw := make(map[string]string, len(envByUser))
	for user, env := range envByUser {
		pw[user] = randomToken(t)
		t.Setenv(env, pw[user])
	}
	return pw
}

func randomToken(t testing.TB) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// userURL is u with a user's name and password.
func userURL(t testing.TB, u, user, password string) string {
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.User = url.UserPassword(user, password)
	return p.String()
}

// violations collects the permission violations a connection is told of.
type violations struct {
	mu   sync.Mutex
	errs []string
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	if errors.Is(err, nats.ErrPermissionViolation) || strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
		v.mu.Lock()
		v.errs = append(v.errs, err.Error())
		v.mu.Unlock()
	}
}

// wait waits until a violation naming subject was reported.
func (v *violations) wait(t *testing.T, what, subject string) {
	t.Helper()
	eventually(t, 10*time.Second, what, func() error {
		v.mu.Lock()
		defer v.mu.Unlock()
		for _, e := range v.errs {
			if strings.Contains(e, subject) {
				return nil
			}
		}
		return fmt.Errorf("no permission violation for %s; got %q", subject, v.errs)
	})
}

// TestPermissionsIsolateWorkers: with the shipped permission file in a real
// server and serve connected as its processor user (serving skill search),
// two workers each get their answers, searches and store skills, and a
// hostile worker with the same permissions cannot subscribe to another
// worker's inbox, to the triggers or to the processors' inboxes, cannot
// publish an answer or a processor output, cannot read the session stream,
// and cannot get a forged answer accepted or a file written outside the
// resource folder.
func TestPermissionsIsolateWorkers(t *testing.T) {
	natsURL, pw := permServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// An operator publishes a store skill.
	op, err := nats.Connect(userURL(t, natsURL, "operator", pw["operator"]))
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	ojs, err := jetstream.New(op)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "pdf")
	writeFile(t, src, "SKILL.md", skillMD("Run scripts/fill.sh.", "name: pdf", "description: Fill PDF forms."))
	writeFile(t, src, "scripts/fill.sh", "#!/bin/sh\necho filled\n")
	pb, err := store.NewPublisher(ctx, ojs, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	local, err := store.ReadSkill(src, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pb.Push(ctx, skillstore.Global, []store.Local{local}, false); err != nil {
		t.Fatal(err)
	}

	// serve as the processor user.
	root := spec4Skills(t)
	t.Chdir(t.TempDir())
	runPermittedServe(t, []string{"serve", "--nats-url", natsURL, "--nats-user", "processor", "--nats-password", pw["processor"],
		"--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--workers", "2", "--skill-search"}, "processor started")

	// Worker A, an honest one.
	a, err := client.Connect(userURL(t, natsURL, "worker-a", pw["worker-a"]), client.WithInboxPrefix("_INBOX.worker-a"),
		client.WithRetryInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	aViol := &violations{}
	a.Conn().SetErrorHandler(aViol.handler)

	// Worker B, hostile, with the same permissions under its own prefix.
	bViol := &violations{}
	b, err := nats.Connect(userURL(t, natsURL, "worker-b", pw["worker-b"]), nats.CustomInboxPrefix("_INBOX.worker-b"),
		nats.ErrorHandler(bViol.handler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var seen sync.Map // subject -> true, for anything B's subscriptions got
	for _, subj := range []string{"_INBOX.worker-a.>", "_INBOX.>", "ev.>", "ev.*.agent.pre-step", "_SKILLSTREAM_INBOX.>", ">"} {
		if _, err := b.Subscribe(subj, func(m *nats.Msg) { seen.Store(m.Subject, true) }); err != nil {
			t.Fatalf("subscribe %s: %v", subj, err)
		}
	}
	for _, subj := range []string{"_INBOX.worker-a.>", "_INBOX.>", "ev.>", "ev.*.agent.pre-step", "_SKILLSTREAM_INBOX.>"} {
		bViol.wait(t, "subscription refused", subj)
	}

	// A's session: a catalog, a local skill, a store skill materialised
	// under its resource folder, the tool definition.
	session := "a-" + randomToken(t)
	cwd := t.TempDir()
	d, err := a.PreStep(ctx, events.PreStep{Session: session, Step: "1", Cwd: cwd, Tools: []events.Tool{client.SkillTool("skillstream")}})
	if err != nil || d.Outcome != events.OutcomeAppended || d.Catalog == nil || !strings.Contains(d.Catalog.Text, "pdf") {
		t.Fatalf("worker A pre-step: %+v, %v", d, err)
	}
	if r, err := a.CallSkill(ctx, events.SkillCall{Session: session, Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "a-skill"}}); err != nil || r.IsError {
		t.Fatalf("worker A local skill: %+v, %v", r, err)
	}
	resDir := t.TempDir()
	elsewhere := filepath.Join(t.TempDir(), "autostart")
	r, err := a.CallSkill(ctx, events.SkillCall{Session: session, Call: "c2", Cwd: cwd, ResourceDir: resDir, Args: events.SkillArgs{Name: "pdf"}})
	if err != nil || r.IsError {
		t.Fatalf("worker A store skill: %+v, %v", r, err)
	}
	want := skillstore.ResourcePath(resDir, "pdf", local.Record.Digest)
	if got, err := os.ReadFile(filepath.Join(want, "scripts", "fill.sh")); err != nil || !strings.Contains(string(got), "echo filled") {
		t.Fatalf("materialised file: %q, %v", got, err)
	}
	if def, err := a.ToolDefinition(ctx); err != nil || def.Name != "skill" {
		t.Fatalf("tool definition: %+v, %v", def, err)
	}
	if defs, err := a.ToolDefinitions(ctx); err != nil || len(defs) != 2 || defs[1].Name != "skill_search" {
		t.Fatalf("tool definitions: %+v, %v", defs, err)
	}
	if r, err := a.SearchSkills(ctx, events.SkillSearch{Session: session, Call: "s1", Cwd: cwd, Args: events.SearchArgs{Query: "fill pdf forms"}}); err != nil ||
		r.Search == nil || len(r.Search.Results) == 0 || r.Search.Results[0].Name != "pdf" {
		t.Fatalf("worker A skill search: %+v, %v", r, err)
	}

	// B cannot answer for the processor: a forged answer to A's inbox and
	// forged outputs in A's session are refused by the server.
	forged := events.ToolResult{V: 1, Session: session, Call: "c3", TriggerSeq: 1, Text: "FORGED",
		Value: &events.SkillValue{Name: "pdf", Provider: client.StoreProvider, Digest: local.Record.Digest,
			ResourceBase: &events.ResourceBase{Kind: "directory", Path: elsewhere}}}
	data, err := events.Encode(events.Msgpack, forged)
	if err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"_INBOX.worker-a.x.1", events.Subject(events.DefaultPrefix, session, events.KindToolResult),
		events.Subject(events.DefaultPrefix, session, events.KindCatalog), "$JS.API.DIRECT.GET.SESSIONS", "$JS.API.STREAM.INFO.SESSIONS",
		"$JS.API.CONSUMER.CREATE.SESSIONS.spy", "_SKILLSTREAM_INBOX.x", "$KV.SKILLS.global.pdf", "$JS.API.STREAM.INFO.OBJ_SKILLS",
		"$JS.API.CONSUMER.CREATE.OBJ_SKILLS.spy", "$SRV.INFO.skillstream"} {
		if err := b.Publish(subj, data); err != nil {
			t.Fatal(err)
		}
		bViol.wait(t, "publish refused", subj)
	}
	// B's own triggers are answered on its own inbox; one naming the
	// processors' inboxes as Reply-Inbox is rejected, answered nowhere.
	bjs, err := jetstream.New(b)
	if err != nil {
		t.Fatal(err)
	}
	bsub, err := b.SubscribeSync("_INBOX.worker-b.answers")
	if err != nil {
		t.Fatal(err)
	}
	for i, inbox := range []string{"_SKILLSTREAM_INBOX.steal", "_INBOX.worker-b.answers"} {
		ps := events.PreStep{V: 1, Session: "b-" + randomToken(t), Step: fmt.Sprint(i), Tools: []events.Tool{client.SkillTool("skillstream")}}
		pdata, _ := events.Encode(events.Msgpack, ps)
		m := &nats.Msg{Subject: events.Subject(events.DefaultPrefix, ps.Session, events.KindPreStep), Data: pdata,
			Header: nats.Header{events.HeaderReplyInbox: {inbox}}}
		if _, err := bjs.PublishMsg(ctx, m); err != nil {
			t.Fatalf("worker B's own trigger: %v", err)
		}
	}
	am, err := bsub.NextMsg(30 * time.Second)
	if err != nil {
		t.Fatalf("worker B's answer: %v", err)
	}
	if bd, err := events.DecodeDecision(events.Msgpack, am.Data); err != nil || bd.Step != "1" {
		t.Errorf("worker B's answer: %+v, %v; want the answer to its step 1 only", bd, err)
	}

	// B's reply subjects: whatever B names as the reply subject of an
	// allowed trigger or request, JetStream's acknowledgement and the
	// processor's answer go to that subject in B's own account, where
	// nothing is stored. Twenty acknowledgements aimed at the store's
	// index, one at an object's metadata, and outputs planted in a victim
	// session that B knows the id of.
	victim := "v-" + randomToken(t)
	metaSubj := "$O." + skillstore.DefaultObjects + ".M." + base64.URLEncoding.EncodeToString([]byte(skillstore.ObjectName(local.Record.Digest)))
	bSession := "b-" + randomToken(t)
	replies := []string{metaSubj}
	for range 20 {
		replies = append(replies, "$KV.SKILLS.global.pdf")
	}
	for _, k := range []events.Kind{events.KindCatalog, events.KindCatalogHead, events.KindToolResult, events.KindInvocation} {
		replies = append(replies, events.Subject(events.DefaultPrefix, victim, k))
	}
	for i, reply := range replies {
		ps := events.PreStep{V: 1, Session: bSession, Step: fmt.Sprint("r", i), Tools: []events.Tool{client.SkillTool("skillstream")}}
		pdata, _ := events.Encode(events.Msgpack, ps)
		if err := b.PublishMsg(&nats.Msg{Subject: events.Subject(events.DefaultPrefix, bSession, events.KindPreStep), Reply: reply, Data: pdata}); err != nil {
			t.Fatal(err)
		}
		if err := b.PublishRequest(events.ToolDefinitionSubject, reply, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A worker's message is bounded by its account: a trigger of 100 KiB
	// never reaches the stream.
	if n := b.MaxPayload(); n != 64<<10 {
		t.Errorf("a worker may publish %d bytes, want the account's 64 KiB", n)
	}
	big := &nats.Msg{Subject: events.Subject(events.DefaultPrefix, bSession, events.KindPreStep), Data: make([]byte, 100<<10)}
	if _, err := bjs.PublishMsg(ctx, big); !errors.Is(err, nats.ErrMaxPayload) {
		t.Errorf("a 100 KiB trigger: %v, want it refused as over the maximum payload", err)
	}
	// B takes, in its own session, the Msg-Id an output of A's next
	// session would have had when output ids were predictable.
	a2 := "a-" + randomToken(t)
	for _, id := range []string{a2 + ":1:" + string(events.KindCatalog), a2 + ":c1:" + string(events.KindToolResult)} {
		squat := events.Compaction{V: 1, Session: bSession, RetainFrom: 1}
		sdata, _ := events.Encode(events.Msgpack, squat)
		if _, err := bjs.PublishMsg(ctx, &nats.Msg{Subject: events.Subject(events.DefaultPrefix, bSession, events.KindCompaction), Data: sdata,
			Header: nats.Header{events.HeaderMsgID: {id}}}); err != nil {
			t.Fatalf("worker B's squat of %s: %v", id, err)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	d2, err := a.PreStep(ctx, events.PreStep{Session: a2, Step: "1", Cwd: cwd, Tools: []events.Tool{client.SkillTool("skillstream")}})
	if err != nil || d2.Outcome != events.OutcomeAppended || d2.Catalog == nil || d2.Catalog.Session != a2 || !strings.Contains(d2.Catalog.Text, "pdf") {
		t.Fatalf("worker A's pre-step after B took its Msg-Id: %+v, %v", d2, err)
	}
	r2, err := a.CallSkill(ctx, events.SkillCall{Session: a2, Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "a-skill"}})
	if err != nil || r2.IsError || r2.Session != a2 || r2.Call != "c1" {
		t.Fatalf("worker A's call after B took its Msg-Id: %+v, %v", r2, err)
	}
	sessions, err := ojs.Stream(ctx, "SESSIONS")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		subject string
		seq     uint64
	}{{events.Subject(events.DefaultPrefix, a2, events.KindCatalog), d2.CatalogSeq}, {events.Subject(events.DefaultPrefix, a2, events.KindToolResult), 0}} {
		m, err := sessions.GetLastMsgForSubject(ctx, c.subject)
		if err != nil {
			t.Errorf("A's session holds no %s: %v", c.subject, err)
			continue
		}
		if c.seq != 0 && m.Sequence != c.seq {
			t.Errorf("A's catalog was answered from %d, the log holds it at %d", c.seq, m.Sequence)
		}
	}
	// Every trigger of B was handled (its pre-steps appended catalogs) by
	// the time the processor answered A; nothing landed in the victim's
	// session, and the skill's index and object are as pushed.
	eventually(t, 10*time.Second, "B's triggers handled", func() error {
		m, err := sessions.GetLastMsgForSubject(ctx, events.Subject(events.DefaultPrefix, bSession, events.KindCatalog))
		if err != nil {
			return err
		}
		if m.Sequence == 0 {
			return errors.New("no catalog yet")
		}
		return nil
	})
	info, err := sessions.Info(ctx, jetstream.WithSubjectFilter(events.SessionWildcard(events.DefaultPrefix, victim)))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != 0 {
		t.Errorf("B planted records in the victim's session: %v", info.State.Subjects)
	}
	hist, err := pb.History(ctx, skillstore.Global, "pdf")
	if err != nil || len(hist) != 1 {
		t.Errorf("the skill's index history after B's replies: %d revisions, %v; want the one pushed", len(hist), err)
	}
	if err := pb.Materialize(ctx, local.Record.Digest, filepath.Join(t.TempDir(), "pdf")); err != nil {
		t.Errorf("the skill's object after B's replies: %v", err)
	}

	// A goes on undisturbed: a new call is answered by the processor and
	// materialises nowhere but under its resource folder.
	r, err = a.CallSkill(ctx, events.SkillCall{Session: session, Call: "c3", Cwd: cwd, ResourceDir: resDir, Args: events.SkillArgs{Name: "pdf"}})
	if err != nil || r.IsError || r.Text == "FORGED" || r.Value.ResourceBase.Path != want {
		t.Fatalf("worker A after the attack: %+v, %v", r, err)
	}
	if _, err := os.Stat(elsewhere); !os.IsNotExist(err) {
		t.Errorf("a file landed at %s: %v", elsewhere, err)
	}
	if n := a.DroppedAnswers(); n != 0 {
		t.Errorf("worker A dropped %d answers; with the permissions none but the processor's reach it", n)
	}
	aViol.mu.Lock()
	if len(aViol.errs) > 0 {
		t.Errorf("worker A was refused: %q", aViol.errs)
	}
	aViol.mu.Unlock()
	bViol.mu.Lock()
	t.Logf("worker B was refused: %q", bViol.errs)
	bViol.mu.Unlock()
	seen.Range(func(k, _ any) bool {
		if !strings.HasPrefix(k.(string), "_INBOX.worker-b.") {
			t.Errorf("worker B saw a message on %s", k)
		}
		return true
	})
}

// TestCwdRootConfinesLinks: serve with --cwd-root serves nothing of a
// project that lies outside the root: a skill folder linked out of it is
// neither listed nor loadable, and a repository above the root does not
// make its skills a project's. The same links are served without it.
func TestCwdRootConfinesLinks(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tenants")
	proj := filepath.Join(root, "proj")
	writeFile(t, base, "outside/secret/SKILL.md", skillMD("Secret body.", "name: secret", "description: Outside the root."))
	writeFile(t, proj, ".agents/skills/good/SKILL.md", skillMD("Good body.", "name: good", "description: Inside."))
	if err := os.Mkdir(filepath.Join(proj, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside", "secret"), filepath.Join(proj, ".agents", "skills", "secret")); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, c := range []struct {
		name    string
		flags   []string
		listed  string
		loadsIt bool
	}{
		{"without --cwd-root", nil, "secret", true},
		{"with --cwd-root", []string{"--cwd-root", root}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startServe(t, t.TempDir(), empty, append([]string{"--no-skill-store"}, c.flags...)...)
			w, err := client.Connect(s.url)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			sid := "s-" + randomToken(t)
			d, err := w.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Cwd: proj, Tools: []events.Tool{client.SkillTool("skillstream")}})
			if err != nil || d.Catalog == nil {
				t.Fatalf("pre-step: %+v, %v", d, err)
			}
			text := d.Catalog.Text
			if !strings.Contains(text, "good") || strings.Contains(text, "secret") != (c.listed != "") {
				t.Errorf("catalog:\n%s\nwant good, and secret listed: %v", text, c.listed != "")
			}
			r, err := w.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Cwd: proj, Args: events.SkillArgs{Name: "secret"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := !r.IsError && strings.Contains(r.Text, "Secret body."); got != c.loadsIt {
				t.Errorf("skill secret loaded: %v, want %v:\n%s", got, c.loadsIt, r.Text)
			}
		})
	}
}
