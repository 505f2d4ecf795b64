package events

import (
	"strings"
	"testing"
)

func TestViewRequestAndReply(t *testing.T) {
	for _, enc := range []Encoding{JSON, Msgpack} {
		b, err := Encode(enc, ViewRequest{V: 1, Cwd: "/p", Project: "team-a", ResourceDir: "/res"})
		if err != nil {
			t.Fatal(err)
		}
		r, err := DecodeViewRequest(enc, b)
		if err != nil || r.Cwd != "/p" || r.Project != "team-a" || r.ResourceDir != "/res" {
			t.Fatalf("%v: %+v %v", enc, r, err)
		}
		b, err = Encode(enc, ViewReply{V: 1, Instance: "host-1", Complete: true, Digest: "d", Revision: 7})
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := DecodeViewReply(enc, b); err != nil || rep.Revision != 7 || rep.Digest != "d" || !rep.Complete {
			t.Fatalf("%v: %+v %v", enc, rep, err)
		}
	}
	for body, want := range map[string]string{
		`{"v":2}`:                     "v",
		`{"v":1,"project":"a b"}`:     "project",
		`{"v":1,"resourceDir":"x/y"}`: "resourceDir",
		`[1]`:                         "",
	} {
		if _, err := DecodeViewRequest(JSON, []byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", body, err, want)
		}
	}
	if _, err := DecodeViewReply(JSON, []byte(`{"v":1,"instance":"a.b"}`)); err == nil || !strings.Contains(err.Error(), "instance") {
		t.Errorf("reply of a bad instance: %v", err)
	}
	for body, want := range map[string]string{
		`{"v":1,"instance":"a","store":"x\ny"}`:                             "store",
		`{"v":1,"instance":"a","store":"` + strings.Repeat("s", 300) + `"}`: "store",
		`{"v":1,"instance":"a","store":"a/b/c"}`:                            "store",
		`{"v":1,"instance":"a","epoch":"` + strings.Repeat("e", 65) + `"}`:  "epoch",
	} {
		if _, err := DecodeViewReply(JSON, []byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60s: %v, want an error naming %q", body, err, want)
		}
	}
	rep, err := DecodeViewReply(JSON, []byte(`{"v":1,"instance":"a","store":"SKILLS/OBJ-1","epoch":"0123456789abcdef","noStore":false}`))
	if err != nil || rep.Store != "SKILLS/OBJ-1" || rep.Epoch != "0123456789abcdef" {
		t.Errorf("a reply with a store: %+v, %v", rep, err)
	}
}

func TestInstanceToken(t *testing.T) {
	for in, want := range map[string]string{
		"host.example.com": "host-example-com",
		"":                 "x",
		"a b*c>":           "a-b-c-",
		"ünï":              "--n--",
	} {
		if got := InstanceToken(in, 100); got != want || !ValidInstance(got) {
			t.Errorf("InstanceToken(%q) = %q, want %q", in, got, want)
		}
	}
	if got := InstanceToken(strings.Repeat("h", 300), 119); len(got) != 119 {
		t.Errorf("not cut: %d bytes", len(got))
	}
	if ValidInstance("a.b") || ValidInstance("") || !ValidInstance("pod-7_b") {
		t.Error("ValidInstance")
	}
	if ViewSubject("pod-7") != "skillstream.view.pod-7" {
		t.Error(ViewSubject("pod-7"))
	}
}
