package catalog_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStdlibOnly keeps catalog pure: every file of the package, tests
// included, imports only the standard library (an import path whose first
// element has no dot) or catalog itself. Standard packages import only
// standard packages, so this bounds the whole dependency graph. CI repeats
// the check with go list -deps.
func TestStdlibOnly(t *testing.T) {
	const self = "github.com/skillstream/skillstream/catalog"
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("list package files: %v (%d files)", err, len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatalf("%s: import %s: %v", name, imp.Path.Value, err)
			}
			first, _, _ := strings.Cut(path, "/")
			if strings.Contains(first, ".") && path != self {
				t.Errorf("%s imports %q, outside the standard library", name, path)
			}
		}
	}
}
