package main

import "testing"

// TestServingLineSaysModelTextOptions: serve's "skillstream serving" line
// names the options that shape what the model is shown: the catalog update
// mode always (full by default), user invocation and skill search when
// they are on, and never an option that is off.
func TestServingLineSaysModelTextOptions(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  map[string]any
		not   []string
	}{
		{nil, map[string]any{"catalog_updates": "full"}, []string{"user_invocation", "skill_search", "catalog_rank"}},
		{[]string{"--catalog-rank", "use"}, map[string]any{"catalog_rank": "use"}, nil},
		{[]string{"--catalog-updates", "changes", "--user-invocation", "--skill-search"},
			map[string]any{"catalog_updates": "changes", "user_invocation": "on", "skill_search": "on"}, nil},
	} {
		s := startServe(t, t.TempDir(), manyRoot(t, 1), tc.flags...)
		line := s.servingLine(t)
		for k, v := range tc.want {
			if line[k] != v {
				t.Errorf("serve %v: the serving line has %s=%v, want %v: %v", tc.flags, k, line[k], v, line)
			}
		}
		for _, k := range tc.not {
			if _, ok := line[k]; ok {
				t.Errorf("serve %v: the serving line names %s, which is off: %v", tc.flags, k, line)
			}
		}
		s.stop()
	}
}
