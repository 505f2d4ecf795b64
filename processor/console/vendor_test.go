package console_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVendoredUplot: the chart library the console embeds is the version
// web/package-lock.json pins, with its license, and, when web/node_modules
// is installed (npm ci in processor/console/web, as CI runs it), the
// committed copies equal the installed files byte for byte: vendor.sh
// was run after the last change of the pin.
func TestVendoredUplot(t *testing.T) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	var lock struct {
		Packages map[string]struct {
			Version   string `json:"version"`
			Integrity string `json:"integrity"`
		} `json:"packages"`
	}
	readJSON(t, "web/package.json", &pkg)
	readJSON(t, "web/package-lock.json", &lock)
	pinned := pkg.Dependencies["uplot"]
	locked := lock.Packages["node_modules/uplot"]
	if pinned == "" || strings.ContainsAny(pinned, "^~<>=*x ") || pinned != locked.Version || locked.Integrity == "" {
		t.Fatalf("uplot pinned %q in package.json, %q (integrity %q) in package-lock.json: pin one exact version in both", pinned, locked.Version, locked.Integrity)
	}
	vendored := filepath.Join("assets", "vendor", "uplot")
	js, err := os.ReadFile(filepath.Join(vendored, "uPlot.iife.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js[:min(len(js), 200)], []byte("(v"+pinned+")")) {
		t.Errorf("the vendored uPlot.iife.min.js is not v%s: %q", pinned, js[:min(len(js), 100)])
	}
	if lic, err := os.ReadFile(filepath.Join(vendored, "LICENSE")); err != nil || !bytes.Contains(lic, []byte("MIT License")) {
		t.Errorf("the vendored LICENSE: %v", err)
	}
	installed := filepath.Join("web", "node_modules", "uplot")
	if _, err := os.Stat(installed); err != nil {
		t.Logf("%s is not installed (npm ci in processor/console/web): the copies are not compared with it", installed)
		return
	}
	var ipkg struct {
		Version string `json:"version"`
	}
	readJSON(t, filepath.Join(installed, "package.json"), &ipkg)
	if ipkg.Version != pinned {
		t.Errorf("node_modules holds uplot %s, the lock pins %s: run npm ci", ipkg.Version, pinned)
	}
	for _, f := range []string{"dist/uPlot.iife.min.js", "dist/uPlot.min.css", "LICENSE"} {
		want, err := os.ReadFile(filepath.Join(installed, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(vendored, filepath.Base(f)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("assets/vendor/uplot/%s differs from node_modules/uplot/%s: run web/vendor.sh and commit the copies", filepath.Base(f), f)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
