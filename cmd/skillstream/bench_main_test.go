package main

import (
	"context"
	"os"
	"testing"
)

// benchExecMain, set in a child's environment, makes the test binary run
// the program instead of the tests: bench --scale starts `skills push` and
// `serve` as os.Executable(), which under go test is the test binary.
const benchExecMain = "GO_TEST_SKILLSTREAM_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(benchExecMain) == "1" {
		os.Exit(Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
