package events

import (
	"errors"
	"strings"
	"testing"
)

// TestPathBounds: cwd and resourceDir are refused, with the bound named,
// past PATH_MAX, NAME_MAX or MaxPathComponents, and the refusal never
// carries the path itself; paths at the bounds pass.
func TestPathBounds(t *testing.T) {
	atLength := "/" + strings.Repeat(strings.Repeat("c", 200)+"/", 20) + strings.Repeat("d", MaxPathLength-1-20*201)
	cases := []struct {
		name, cwd, why string
	}{
		{"ordinary", "/home/me/project", ""},
		{"relative passes here", "project/sub", ""},
		{"at the length bound", atLength, ""},
		{"at the component bound", strings.Repeat("/a", MaxPathComponents), ""},
		{"a component at NAME_MAX", "/" + strings.Repeat("n", MaxPathComponent), ""},
		{"10,000 components", strings.Repeat("/a", 10000), "too long"},
		{"257 components", strings.Repeat("/a", MaxPathComponents+1), "too many components"},
		{"one byte over", atLength + "e", "too long"},
		{"a component over NAME_MAX", "/" + strings.Repeat("n", MaxPathComponent+1), "longer than 255"},
		{"60 KB", "/" + strings.Repeat("b", 60<<10), "too long"},
		{"control character", "/home/me\n/x", "control character"},
		{"NUL", "/home/\x00", "control character"},
		{"not UTF-8", "/home/\xff", "UTF-8"},
	}
	for _, c := range cases {
		ps := PreStep{V: Version, Session: "s", Step: "1", Cwd: c.cwd}
		sc := SkillCall{V: Version, Session: "s", Call: "1", Cwd: c.cwd}
		vr := ViewRequest{V: Version, Cwd: c.cwd}
		for what, err := range map[string]error{"pre-step": ps.Validate(), "skill call": sc.Validate(), "view request": vr.Validate()} {
			if c.why == "" {
				if err != nil {
					t.Errorf("%s: %s: %v", c.name, what, err)
				}
				continue
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "cwd" || !strings.Contains(err.Error(), c.why) {
				t.Errorf("%s: %s: err %v, want a cwd field error naming %q", c.name, what, err, c.why)
			}
			if err != nil && len(err.Error()) > 200 {
				t.Errorf("%s: %s: error of %d bytes", c.name, what, len(err.Error()))
			}
		}
	}
	// resourceDir: the same bounds within its own length limit.
	for _, dir := range []string{strings.Repeat("/a", MaxResourceDirLength), "/" + strings.Repeat("n", MaxPathComponent+1), strings.Repeat("/a", MaxPathComponents+1)} {
		ps := PreStep{V: Version, Session: "s", Step: "1", ResourceDir: dir}
		var fe *FieldError
		if err := ps.Validate(); !errors.As(err, &fe) || fe.Field != "resourceDir" {
			t.Errorf("resourceDir of %d bytes: %v, want refused", len(dir), err)
		}
	}
	// Decoding refuses it too, as a field error.
	if _, err := DecodePreStep(JSON, []byte(`{"v":1,"session":"s","step":"1","tools":[],"cwd":"`+strings.Repeat("/a", 300)+`"}`)); !errors.Is(err, ErrBadPayload) {
		t.Errorf("decode of a 300-component cwd: %v", err)
	}
}
