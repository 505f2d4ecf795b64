package replay

import (
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// MergeOptions: the recording's options where no flag was given, the
// flag's where one was, each setting saying both; an older recording
// leaves the flags as they are.
func TestMergeOptions(t *testing.T) {
	flags := catalog.DefaultOptions()
	flags.SkillSearch = false
	rec := &events.CatalogOptions{DescriptionMax: 40, MaxLength: 2000, MaxSkillBytes: 4096, ListedMax: 9, Search: true, Updates: "changes", UserInvocation: true, Rank: "use"}
	got, settings := MergeOptions(flags, func(f string) bool { return f == "skill-search" }, rec)
	want := catalog.Options{DescriptionMaxLength: 40, MaxLength: 2000, MaxSkillBytes: 4096, ListedMax: 9, SkillSearch: false,
		Updates: catalog.UpdatesChanges, UserInvocation: true, Rank: catalog.RankUse}
	if got != want {
		t.Errorf("merged %+v, want %+v", got, want)
	}
	differ := 0
	for _, s := range settings {
		if s.Differs() {
			differ++
			if s.Flag != "skill-search" || s.Value != "false" || s.Recorded != "true" || !s.Given {
				t.Errorf("differing setting %+v", s)
			}
		}
	}
	if differ != 1 || len(settings) != 8 {
		t.Errorf("%d settings, %d differ: %+v", len(settings), differ, settings)
	}
	got, settings = MergeOptions(flags, nil, nil)
	if got != flags {
		t.Errorf("without recorded options: %+v, want the flags %+v", got, flags)
	}
	for _, s := range settings {
		if s.Recorded != "" || s.Differs() {
			t.Errorf("setting of an older recording %+v", s)
		}
	}
}

// A session recorded with the search index over bodies replays with it
// unless a flag says otherwise, and the options line names it; one
// recorded without it does not name it.
func TestMergeOptionsSearchBodies(t *testing.T) {
	flags := catalog.DefaultOptions()
	rec := &events.CatalogOptions{DescriptionMax: 40, MaxLength: 2000, MaxSkillBytes: 4096, Search: true, SearchBodies: true}
	got, settings := MergeOptions(flags, nil, rec)
	if !got.SearchBodies {
		t.Fatal("the recording's search-bodies was not used")
	}
	named := false
	for _, s := range settings {
		if s.Flag == "search-bodies" {
			named = s.Value == "true" && s.Recorded == "true"
		}
	}
	if !named {
		t.Errorf("search-bodies not named as recorded: %+v", settings)
	}
	got, _ = MergeOptions(flags, func(f string) bool { return f == "search-bodies" }, rec)
	if got.SearchBodies {
		t.Error("the flag given (off) did not override the recording")
	}
	rec.SearchBodies = false
	_, settings = MergeOptions(flags, nil, rec)
	for _, s := range settings {
		if s.Flag == "search-bodies" {
			t.Errorf("search-bodies named though off on both sides: %+v", s)
		}
	}
}
