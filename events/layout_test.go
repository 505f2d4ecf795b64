package events

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseLayout(t *testing.T) {
	for s, want := range map[string]Layout{"": LayoutFlat, "flat": LayoutFlat, "owner": LayoutOwner} {
		if l, err := ParseLayout(s); err != nil || l != want {
			t.Errorf("ParseLayout(%q) = %v, %v; want %v", s, l, err, want)
		}
	}
	for _, s := range []string{"Owner", "tenant", " flat", "owner "} {
		_, err := ParseLayout(s)
		if err == nil || !strings.Contains(err.Error(), "want flat or owner") || !strings.Contains(err.Error(), "unknown session layout") {
			t.Errorf("ParseLayout(%q) = %v, want an error naming the layouts", s, err)
		}
	}
	if LayoutFlat.String() != "flat" || LayoutOwner.String() != "owner" || Layout(7).Valid() || !LayoutOwner.Valid() {
		t.Error("layout names")
	}
	var zero Layout
	if zero != LayoutFlat {
		t.Error("the zero layout is not flat")
	}
}

func TestValidSessionIn(t *testing.T) {
	long := strings.Repeat("x", 128)
	owner := []string{"a1.s7", "A-z_09.-", long + "." + long, "_._"}
	flat := []string{"a1", "s7", long, "-"}
	neither := []string{"", ".", "a.", ".b", "a..b", "a.b.c", "a.*", "*.b", "a.>", ">", "a b.c", "a." + long + "x",
		long + "x.b", "sessión.b", "a.b\x00", "a/b.c", "a:b.c", "a.b.", "a\t.b"}
	for _, s := range owner {
		if !ValidSessionIn(LayoutOwner, s) || CheckSessionIn(LayoutOwner, s) != nil {
			t.Errorf("owner layout refuses %q", s)
		}
		if ValidSessionIn(LayoutFlat, s) || ValidSession(s) {
			t.Errorf("flat layout accepts %q", s)
		}
		if l, ok := SessionLayout(s); !ok || l != LayoutOwner {
			t.Errorf("SessionLayout(%q) = %v, %v", s, l, ok)
		}
	}
	for _, s := range flat {
		if !ValidSessionIn(LayoutFlat, s) || CheckSessionIn(LayoutFlat, s) != nil {
			t.Errorf("flat layout refuses %q", s)
		}
		if ValidSessionIn(LayoutOwner, s) {
			t.Errorf("owner layout accepts the flat id %q", s)
		}
		if l, ok := SessionLayout(s); !ok || l != LayoutFlat {
			t.Errorf("SessionLayout(%q) = %v, %v", s, l, ok)
		}
	}
	for _, s := range neither {
		for _, l := range []Layout{LayoutFlat, LayoutOwner} {
			if ValidSessionIn(l, s) {
				t.Errorf("%v layout accepts %q", l, s)
			}
			if err := CheckSessionIn(l, s); !errors.Is(err, ErrBadSession) {
				t.Errorf("CheckSessionIn(%v, %q) = %v, want ErrBadSession", l, s, err)
			}
		}
		if _, ok := SessionLayout(s); ok {
			t.Errorf("SessionLayout(%q) is ok", s)
		}
	}
	if ValidSessionIn(Layout(9), "a") || CheckSessionIn(Layout(9), "a") == nil {
		t.Error("an unknown layout accepts a session")
	}
}

// TestCheckSessionInSays: the errors say what the layout wants, and name an
// id of the other layout as such.
func TestCheckSessionInSays(t *testing.T) {
	for _, tc := range []struct {
		l    Layout
		sid  string
		want []string
	}{
		{LayoutFlat, "a1.s7", []string{`bad session token "a1.s7"`, "owner session layout, which is not set"}},
		{LayoutFlat, "a b", []string{`bad session token "a b": want 1 to 128 of A-Z a-z 0-9 _ -`}},
		{LayoutOwner, "s7", []string{`bad session token "s7"`, "<owner>.<session>", "one token (a flat layout id)"}},
		{LayoutOwner, "a.b.c", []string{`"a.b.c"`, "two tokens of 1 to 128 of A-Z a-z 0-9 _ - joined by one dot"}},
		{LayoutOwner, ".s7", []string{`".s7"`, "two tokens"}},
		{LayoutOwner, "a1.*", []string{`"a1.*"`, "two tokens"}},
	} {
		err := CheckSessionIn(tc.l, tc.sid)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("CheckSessionIn(%v, %q) = %v, want it to say %q", tc.l, tc.sid, err, w)
			}
		}
	}
	// The flat layout's error for anything else is CheckSession's, as it was.
	if a, b := CheckSessionIn(LayoutFlat, "a b"), CheckSession("a b"); a.Error() != b.Error() {
		t.Errorf("flat: %v, CheckSession: %v", a, b)
	}
}

func TestSubjectsInOwnerLayout(t *testing.T) {
	if got := Subject("ev", "a1.s7", KindPreStep); got != "ev.a1.s7.agent.pre-step" {
		t.Errorf("Subject = %q", got)
	}
	if got := SessionWildcard("ev", "a1.s7"); got != "ev.a1.s7.>" {
		t.Errorf("SessionWildcard = %q", got)
	}
	if got, want := TriggerFiltersIn(LayoutOwner, "ev"), []string{"ev.*.*.agent.pre-step", "ev.*.*.tool.call.skill", "ev.*.*.tool.call.skill_search"}; !reflect.DeepEqual(got, want) {
		t.Errorf("TriggerFiltersIn(owner) = %q, want %q", got, want)
	}
	if got, want := TriggerFiltersIn(LayoutFlat, "ev"), TriggerFilters("ev"); !reflect.DeepEqual(got, want) {
		t.Errorf("TriggerFiltersIn(flat) = %q, want %q", got, want)
	}
	if got := TriggerFilterIn(LayoutOwner, "acme.ev", KindSkillSearch); got != "acme.ev.*.*.tool.call.skill_search" {
		t.Errorf("TriggerFilterIn(owner) = %q", got)
	}
	if got := TriggerFilterIn(LayoutFlat, "ev", KindSkillSearch); got != TriggerFilters("ev")[2] {
		t.Errorf("TriggerFilterIn(flat) = %q", got)
	}
	if got := StreamSubjects("ev"); got != "ev.>" {
		t.Errorf("StreamSubjects = %q", got)
	}
}

func TestParseSubjectIn(t *testing.T) {
	long := strings.Repeat("a", 128)
	for _, tc := range []struct {
		prefix, subject string
		sid             string
		kind            Kind
	}{
		{"ev", "ev.a1.s7.agent.pre-step", "a1.s7", KindPreStep},
		{"ev", "ev.a1.s7.tool.call.skill", "a1.s7", KindSkillCall},
		{"ev", "ev.a1.s7.tool.call.skill_search", "a1.s7", KindSkillSearch},
		{"ev", "ev.a-1.S_2-x.context.compact", "a-1.S_2-x", KindCompaction},
		{"ev", "ev.a1.s7.catalog.append", "a1.s7", KindCatalog},
		{"ev", "ev.a1.s7.catalog.head", "a1.s7", KindCatalogHead},
		{"ev", "ev.a1.s7.tool.result", "a1.s7", KindToolResult},
		{"ev", "ev.a1.s7.message.user", "a1.s7", "message.user"},
		{"acme.ev", "acme.ev.a1.s7.agent.pre-step", "a1.s7", KindPreStep},
		{"ev", "ev." + long + "." + long + ".x", long + "." + long, "x"},
		// A flat subject read in the owner layout: its kind's first token
		// is taken for the session's second, leaving a kind no one uses.
		{"ev", "ev.s7.agent.pre-step", "s7.agent", "pre-step"},
	} {
		sid, k, err := ParseSubjectIn(LayoutOwner, tc.prefix, tc.subject)
		if err != nil || sid != tc.sid || k != tc.kind {
			t.Errorf("ParseSubjectIn(owner, %q, %q) = %q, %q, %v; want %q, %q", tc.prefix, tc.subject, sid, k, err, tc.sid, tc.kind)
		}
		if Subject(tc.prefix, sid, k) != tc.subject {
			t.Errorf("Subject does not rebuild %q", tc.subject)
		}
	}
	// The flat layout is ParseSubject.
	for _, s := range []string{"ev.s1.agent.pre-step", "ev.a1.s7.agent.pre-step", "ev..x", "ev.s1"} {
		sid1, k1, err1 := ParseSubjectIn(LayoutFlat, "ev", s)
		sid2, k2, err2 := ParseSubject("ev", s)
		if sid1 != sid2 || k1 != k2 || (err1 == nil) != (err2 == nil) {
			t.Errorf("ParseSubjectIn(flat, %q) = %q %q %v, ParseSubject %q %q %v", s, sid1, k1, err1, sid2, k2, err2)
		}
	}
}

func TestParseSubjectInBad(t *testing.T) {
	long := strings.Repeat("a", 129)
	for _, tc := range []struct {
		prefix, subject string
		badSession      bool
	}{
		{"ev", "", false},
		{"ev", "ev", false},
		{"ev", "ev.", false},
		{"ev", "ev.a1", false},
		{"ev", "ev.a1.s7", false},
		{"ev", "ev.a1.s7.", false},
		{"ev", "other.a1.s7.agent.pre-step", false},
		{"", ".a1.s7.agent.pre-step", false},
		{"ev", "ev..s7.agent.pre-step", true}, // empty owner
		{"ev", "ev.a1..agent.pre-step", true}, // empty session
		{"ev", "ev.*.s7.agent.pre-step", true},
		{"ev", "ev.a1.*.agent.pre-step", true},
		{"ev", "ev.>.s7.agent.pre-step", true},
		{"ev", "ev.a1.>.agent.pre-step", true},
		{"ev", "ev." + long + ".s7.agent.pre-step", true},
		{"ev", "ev.a1." + long + ".agent.pre-step", true},
		{"ev", "ev.ownér.s7.agent.pre-step", true},
		{"ev", "ev.a1.s7.agent..pre-step", false},
		{"ev", "ev.a1.s7.agent.*", false},
		{"ev", "ev.a1.s7.>", false},
		{"ev", "ev.a1.s7.a b", false},
	} {
		_, _, err := ParseSubjectIn(LayoutOwner, tc.prefix, tc.subject)
		if !errors.Is(err, ErrBadSubject) {
			t.Errorf("ParseSubjectIn(owner, %q, %q) err = %v, want ErrBadSubject", tc.prefix, tc.subject, err)
		}
		if tc.badSession != errors.Is(err, ErrBadSession) {
			t.Errorf("ParseSubjectIn(owner, %q, %q) err = %v, ErrBadSession match should be %v", tc.prefix, tc.subject, err, tc.badSession)
		}
	}
	if _, _, err := ParseSubjectIn(Layout(5), "ev", "ev.a.b"); !errors.Is(err, ErrBadSubject) {
		t.Errorf("unknown layout: %v", err)
	}
}

// FuzzParseSubjectIn: whatever the subject, ParseSubjectIn does not panic,
// and what it accepts is a valid session id of its layout and a valid kind
// from which Subject rebuilds the subject.
func FuzzParseSubjectIn(f *testing.F) {
	for _, s := range []string{"ev.a1.s7.agent.pre-step", "ev.s1.agent.pre-step", "ev..s7.x", "ev.a.b.c.d", "ev.*.s.x", "ev.a1.s7.>",
		"ev.a1.s7", "evx.a.b.c", "ev.a\x00.b.c", "ev.a.b. ", ""} {
		f.Add(uint8(1), "ev", s)
		f.Add(uint8(0), "ev", s)
	}
	f.Add(uint8(1), "acme.ev", "acme.ev.o.s.tool.result")
	f.Fuzz(func(t *testing.T, layout uint8, prefix, subject string) {
		l := Layout(layout % 2)
		sid, k, err := ParseSubjectIn(l, prefix, subject)
		if err != nil {
			if !errors.Is(err, ErrBadSubject) {
				t.Fatalf("error %v does not match ErrBadSubject", err)
			}
			return
		}
		if !ValidSessionIn(l, sid) {
			t.Fatalf("session %q is not valid in the %v layout", sid, l)
		}
		if !k.Valid() {
			t.Fatalf("kind %q is not valid", k)
		}
		if got := Subject(prefix, sid, k); got != subject {
			t.Fatalf("Subject(%q, %q, %q) = %q, want %q", prefix, sid, k, got, subject)
		}
	})
}

// TestDecodeInOwnerLayout: every payload with a session decodes with an
// owner-layout id in the owner layout, and is refused with it in the flat
// one (as before); a flat id, three tokens or an empty owner are refused in
// the owner layout, in both encodings, naming the field.
func TestDecodeInOwnerLayout(t *testing.T) {
	cat := Catalog{V: 1, Session: "a1.s7", Step: "1", ID: "a1.s7:1:catalog.append", Role: "user", Text: "t",
		Source: CatalogSource{Kind: "skill-catalog", Producer: "p", Update: "initial", Digest: "ab"}}
	inv := SkillInvocation{V: 1, Session: "a1.s7", Step: "1", ID: "i", Role: "user", Name: "pdf", Text: "t",
		Source: InvocationSource{Kind: "skill-invocation", Name: "pdf", Form: "instructions"}, Value: SkillValue{Name: "pdf", Provider: "p"}}
	payloads := []struct {
		name   string
		v      any
		decode func(Layout, Encoding, []byte) (string, error)
	}{
		{"prestep", PreStep{V: 1, Session: "a1.s7", Step: "1", Tools: []Tool{}}, func(l Layout, e Encoding, b []byte) (string, error) {
			p, err := DecodePreStepIn(l, e, b)
			return p.Session, err
		}},
		{"skillcall", SkillCall{V: 1, Session: "a1.s7", Call: "c", Args: SkillArgs{Name: "pdf"}}, func(l Layout, e Encoding, b []byte) (string, error) {
			p, err := DecodeSkillCallIn(l, e, b)
			return p.Session, err
		}},
		{"skillsearch", SkillSearch{V: 1, Session: "a1.s7", Call: "c", Args: SearchArgs{Query: "pdf"}}, func(l Layout, e Encoding, b []byte) (string, error) {
			p, err := DecodeSkillSearchIn(l, e, b)
			return p.Session, err
		}},
		{"compaction", Compaction{V: 1, Session: "a1.s7", RetainFrom: 3}, func(l Layout, e Encoding, b []byte) (string, error) {
			p, err := DecodeCompactionIn(l, e, b)
			return p.Session, err
		}},
		{"catalog", cat, func(l Layout, e Encoding, b []byte) (string, error) {
			p, err := DecodeCatalogIn(l, e, b)
			return p.Session, err
		}},
		{"cataloghead", CatalogHead{V: 1, Session: "a1.s7", Step: "1", Digest: "ab", View: View{Instance: "i"}}, func(l Layout, e Encoding, b []byte) (string, error) {
			p, err := DecodeCatalogHeadIn(l, e, b)
			return p.Session, err
		}},
		{"skillinvocation", inv, func(l Layout, e Encoding, b []byte) (string, error) {
			p, err := DecodeSkillInvocationIn(l, e, b)
			return p.Session, err
		}},
		{"toolresult", ToolResult{V: 1, Session: "a1.s7", Call: "c", TriggerSeq: 4, Text: "t"}, func(l Layout, e Encoding, b []byte) (string, error) {
			p, err := DecodeToolResultIn(l, e, b)
			return p.Session, err
		}},
		{"decision", Decision{V: 1, Session: "a1.s7", Step: "1", TriggerSeq: 4, Outcome: OutcomeAppended, Catalog: &cat,
			Invocations: []SkillInvocation{inv}}, func(l Layout, e Encoding, b []byte) (string, error) {
			p, err := DecodeDecisionIn(l, e, b)
			return p.Session, err
		}},
	}
	for _, p := range payloads {
		for _, enc := range []Encoding{Msgpack, JSON} {
			b, err := Encode(enc, p.v)
			if err != nil {
				t.Fatal(err)
			}
			if sid, err := p.decode(LayoutOwner, enc, b); err != nil || sid != "a1.s7" {
				t.Errorf("%s %v: owner layout: %q, %v", p.name, enc, sid, err)
			}
			var fe *FieldError
			if _, err := p.decode(LayoutFlat, enc, b); !errors.As(err, &fe) || fe.Field != "session" || fe.Problem != problemBadSession {
				t.Errorf("%s %v: flat layout accepts or misreports an owner id: %v", p.name, enc, err)
			}
			for _, bad := range []string{"s7", "a1.s7.x", ".s7", "a1.", "a1.*"} {
				bb := []byte(strings.Replace(string(b), "a1.s7", bad, 1))
				if enc == Msgpack {
					bb = reencode(t, p.v, bad)
				}
				if _, err := p.decode(LayoutOwner, enc, bb); !errors.As(err, &fe) || fe.Field != "session" || fe.Problem != problemBadOwnerSession {
					t.Errorf("%s %v: owner layout, session %q: %v", p.name, enc, bad, err)
				}
			}
		}
	}
}

// reencode encodes v (a payload struct) with its top-level session set to
// sid, in msgpack.
func reencode(t *testing.T, v any, sid string) []byte {
	t.Helper()
	rv := reflect.New(reflect.TypeOf(v)).Elem()
	rv.Set(reflect.ValueOf(v))
	rv.FieldByName("Session").SetString(sid)
	b, err := Encode(Msgpack, rv.Interface())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLayoutText(t *testing.T) {
	type h struct {
		Layout Layout `json:"layout,omitempty"`
	}
	for _, tc := range []struct {
		l    Layout
		json string
	}{{LayoutFlat, `{}`}, {LayoutOwner, `{"layout":"owner"}`}} {
		b, err := json.Marshal(h{tc.l})
		if err != nil || string(b) != tc.json {
			t.Errorf("marshal %v: %s, %v", tc.l, b, err)
		}
		var back h
		if err := json.Unmarshal(b, &back); err != nil || back.Layout != tc.l {
			t.Errorf("unmarshal %s: %v, %v", b, back.Layout, err)
		}
	}
	var back h
	if err := json.Unmarshal([]byte(`{"layout":"tenant"}`), &back); err == nil || !strings.Contains(err.Error(), "unknown session layout") {
		t.Errorf("an unknown layout reads as %v, %v", back.Layout, err)
	}
	if _, err := Layout(3).MarshalText(); err == nil {
		t.Error("an unknown layout marshals")
	}
}
