package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDependencies: a worker client compiles the wire and the store's
// format, nothing that parses skills or watches files. No package under
// events (the client included) may depend on a skill source (providers),
// the catalog, the file watcher or the YAML parser.
func TestDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go") // the go that runs this test
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", "../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/skillstream/skillstream/"
	deps := strings.Fields(string(out))
	seen := map[string]bool{}
	for _, d := range deps {
		seen[d] = true
		switch {
		case strings.HasPrefix(d, mod+"providers"),
			d == mod+"catalog", strings.HasPrefix(d, mod+"catalog/"),
			strings.HasPrefix(d, mod+"processor"),
			strings.Contains(d, "fsnotify"),
			strings.HasPrefix(d, "go.yaml.in/yaml"), strings.HasPrefix(d, "gopkg.in/yaml"):
			t.Errorf("a package under events depends on %s", d)
		}
	}
	// The list must be the real one: it holds the client and the format.
	for _, want := range []string{mod + "events/client", mod + "events/skillstore", mod + "events"} {
		if !seen[want] {
			t.Errorf("go list -deps ./events/... does not list %s: the check checks nothing", want)
		}
	}
}
