package skillstore

import (
	"reflect"
	"testing"
)

func TestChangedFiles(t *testing.T) {
	a := []File{{Path: "SKILL.md", Data: []byte("a")}, {Path: "gone.sh", Data: []byte("x")}, {Path: "same.txt", Data: []byte("s")}}
	b := []File{{Path: "SKILL.md", Data: []byte("b")}, {Path: "new.sh", Data: []byte("y")}, {Path: "same.txt", Data: []byte("s")}}
	got := ChangedFiles(a, b)
	want := []FileChange{
		{Path: "SKILL.md", What: "changed", A: []byte("a"), B: []byte("b")},
		{Path: "gone.sh", What: "removed", A: []byte("x")},
		{Path: "new.sh", What: "added", B: []byte("y")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ChangedFiles:\n got %+v\nwant %+v", got, want)
	}
	if got := ChangedFiles(a, a); got != nil {
		t.Errorf("the same files: %+v", got)
	}
}
