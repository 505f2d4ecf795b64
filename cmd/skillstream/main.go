// Command skillstream gives LLM agents a skill catalog and a model-facing
// `skill` tool, as a stream processor on NATS JetStream.
//
// `skillstream serve` runs the processor, on an embedded NATS server by
// default or against an existing cluster. `demo` plays a session end to end;
// `catalog`, `load` and `validate` let operators and skill authors see
// exactly what the model will see. Run `skillstream help` for the list.
//
// The operator's manual is MANUAL.md in this folder: every command, flag
// and environment variable, skills on disk and in the skill store, size
// limits, fleets, security, MCP hosts, metrics and performance.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
