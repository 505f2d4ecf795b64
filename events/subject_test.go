package events

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestValidSession(t *testing.T) {
	good := []string{"a", "A-z_09", strings.Repeat("x", 128), "-", "_"}
	bad := []string{"", "a.b", "*", ">", "a b", strings.Repeat("x", 129), "sessión", "日本", "a\x00", "a/b", "a:b", "tab\t"}
	for _, s := range good {
		if !ValidSession(s) || CheckSession(s) != nil {
			t.Errorf("ValidSession(%q) = false, want true", s)
		}
	}
	for _, s := range bad {
		if ValidSession(s) {
			t.Errorf("ValidSession(%q) = true, want false", s)
		}
		if err := CheckSession(s); !errors.Is(err, ErrBadSession) {
			t.Errorf("CheckSession(%q) = %v, want ErrBadSession", s, err)
		}
	}
}

func TestSubjects(t *testing.T) {
	if got := Subject("ev", "s1", KindPreStep); got != "ev.s1.agent.pre-step" {
		t.Errorf("Subject = %q", got)
	}
	if got := Subject("acme.ev", "s1", KindCatalog); got != "acme.ev.s1.catalog.append" {
		t.Errorf("Subject with dotted prefix = %q", got)
	}
	if got := SessionWildcard("ev", "s1"); got != "ev.s1.>" {
		t.Errorf("SessionWildcard = %q", got)
	}
	if got, want := TriggerFilters("ev"), []string{"ev.*.agent.pre-step", "ev.*.tool.call.skill", "ev.*.tool.call.skill_search"}; !reflect.DeepEqual(got, want) {
		t.Errorf("TriggerFilters = %q, want %q", got, want)
	}
	if got := StreamSubjects("ev"); got != "ev.>" {
		t.Errorf("StreamSubjects = %q", got)
	}
}

func TestParseSubject(t *testing.T) {
	for _, tc := range []struct {
		prefix, subject string
		sid             string
		kind            Kind
	}{
		{"ev", "ev.s1.agent.pre-step", "s1", KindPreStep},
		{"ev", "ev.s1.tool.call.skill", "s1", KindSkillCall},
		{"ev", "ev.S_2-x.context.compact", "S_2-x", KindCompaction},
		{"ev", "ev.s1.catalog.append", "s1", KindCatalog},
		{"ev", "ev.s1.tool.result", "s1", KindToolResult},
		{"ev", "ev.s1.message.user", "s1", "message.user"}, // unknown kinds parse
		{"ev", "ev.s1.tool.call.bash", "s1", "tool.call.bash"},
		{"acme.ev", "acme.ev.s1.agent.pre-step", "s1", KindPreStep},
		{"ev", "ev." + strings.Repeat("a", 128) + ".x", strings.Repeat("a", 128), "x"},
	} {
		sid, k, err := ParseSubject(tc.prefix, tc.subject)
		if err != nil || sid != tc.sid || k != tc.kind {
			t.Errorf("ParseSubject(%q, %q) = %q, %q, %v; want %q, %q", tc.prefix, tc.subject, sid, k, err, tc.sid, tc.kind)
		}
		if Subject(tc.prefix, sid, k) != tc.subject {
			t.Errorf("Subject does not rebuild %q", tc.subject)
		}
	}
	if k := Kind("message.user"); k.Known() || !k.Valid() {
		t.Error("an unknown kind is valid but not known")
	}
	if !KindSkillSearch.Known() || KindSkillSearch != "tool.call.skill_search" {
		t.Error("skill searches are a kind the protocol names")
	}
	if !KindSkillCall.Known() {
		t.Error("KindSkillCall not known")
	}
}

func TestParseSubjectBad(t *testing.T) {
	for _, tc := range []struct {
		prefix, subject string
		badSession      bool
	}{
		{"ev", "", false},
		{"ev", "ev", false},
		{"ev", "ev.", false},
		{"ev", "ev.s1", false},
		{"ev", "ev.s1.", false},
		{"ev", "other.s1.agent.pre-step", false},
		{"ev", "evx.s1.agent.pre-step", false},
		{"", ".s1.agent.pre-step", false},
		{"ev", "ev..agent.pre-step", true},
		{"ev", "ev.*.agent.pre-step", true},
		{"ev", "ev.>.agent.pre-step", true},
		{"ev", "ev." + strings.Repeat("a", 129) + ".agent.pre-step", true},
		{"ev", "ev.sessión.agent.pre-step", true},
		{"ev", "ev.s1.agent..pre-step", false},
		{"ev", "ev.s1.agent.*", false},
		{"ev", "ev.s1.>", false},
		{"ev", "ev.s1.a b", false},
	} {
		_, _, err := ParseSubject(tc.prefix, tc.subject)
		if !errors.Is(err, ErrBadSubject) {
			t.Errorf("ParseSubject(%q, %q) err = %v, want ErrBadSubject", tc.prefix, tc.subject, err)
		}
		if tc.badSession != errors.Is(err, ErrBadSession) {
			t.Errorf("ParseSubject(%q, %q) err = %v, ErrBadSession match should be %v", tc.prefix, tc.subject, err, tc.badSession)
		}
	}
}

func TestValidatePrefix(t *testing.T) {
	for _, p := range []string{"ev", "acme.ev", "a-b_c"} {
		if err := ValidatePrefix(p); err != nil {
			t.Errorf("ValidatePrefix(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"", ".", "ev.", ".ev", "a..b", "*", ">", "ev.*", "ev.>", "e v", "ev\n"} {
		if err := ValidatePrefix(p); !errors.Is(err, ErrBadSubject) {
			t.Errorf("ValidatePrefix(%q) = %v, want ErrBadSubject", p, err)
		}
	}
}
