package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
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

// versionLine describes this build in one line:
// "skillstream v1.2.3 (rev 0123abcd, modified) go1.26.8".
func versionLine() string {
	version, rev := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" && modified {
			rev += ", modified"
		}
	}
	line := "skillstream " + version
	if rev != "" {
		line += " (rev " + rev + ")"
	}
	return line + " " + runtime.Version()
}
