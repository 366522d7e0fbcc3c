package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// Tool returns the path of the program name a test needs (valgrind,
// callgrind_annotate, node...), installed by install. Without it the test
// is skipped, saying how to install it, except in CI (CI=true), where
// .ci/run installs it and its absence fails the test.
func Tool(t testing.TB, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (%v): .ci/run installs it (%s)", name, err, install)
		}
		t.Skipf("%s is not installed (%v): %s", name, err, install)
	}
	return path
}
