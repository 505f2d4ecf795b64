package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

func (a *app) versionCommand() (*command, runFunc) {
	cmd := newCommand("version", "skillstream version",
		"Print the module version, the VCS revision it was built from (when known)\nand the Go version.",
		"  skillstream version")
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("version takes no arguments, got %q", args[0])
		}
		fmt.Fprintln(a.stdout, versionLine())
		return nil
	}
}

// build describes the running binary.
type build struct {
	version  string // module version, "(devel)" when unknown
	revision string // VCS revision (12 hex digits), "" when unknown
	modified bool   // built from a modified checkout
}

// thisBuild reads the binary's build information.
func thisBuild() build {
	b := build{version: "(devel)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if bi.Main.Version != "" {
		b.version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	if len(b.revision) > 12 {
		b.revision = b.revision[:12]
	}
	return b
}

// versionLine describes this build in one line:
// "skillstream v1.2.3 (rev 0123abcd, modified) go1.26.8".
func versionLine() string {
	b := thisBuild()
	line := "skillstream " + b.version
	if b.revision != "" {
		rev := b.revision
		if b.modified {
			rev += ", modified"
		}
		line += " (rev " + rev + ")"
	}
	return line + " " + runtime.Version()
}

// buildInfo is the skillstream_build_info metric: 1, labelled with the
// version, revision and Go version of the binary.
func buildInfo() prometheus.Collector {
	b := thisBuild()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "skillstream", Name: "build_info",
		Help: "Always 1; the labels describe the running binary.",
	}, []string{"version", "revision", "goversion"})
	g.WithLabelValues(b.version, b.revision, runtime.Version()).Set(1)
	return g
}
