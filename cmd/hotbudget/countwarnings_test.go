package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCountWarningsOnce: callgrind's warnings about a capture (a real
// dump whose sort ends inside a call) are said once per file read, on
// stderr, never in each rule's or function's message (perfassert had put
// them in every check's message of a capture: "each failure message
// repeats callgrind's warning about runtime.newstack"): check with three
// rules on it, diff and top.
func TestCountWarningsOnce(t *testing.T) {
	inRepoRoot(t)
	const dump = "testdata/callgrind/c-instr.callgrind.gz"
	const warning = "inclusive cost other than what they spent"
	budget := filepath.Join(t.TempDir(), "b.yaml")
	if err := os.WriteFile(budget, []byte("version: 1\nrules:\n  - function: main\n    max_self_share: 1%\n  - function: main\n    max_total_share: 1%\n  - function: main\n    max_regression: 1%\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args  []string
		files int // the files read: the warning once for each
	}{
		{[]string{"check", "--budget", budget, "--baseline", dump, dump}, 2},
		{[]string{"check", "--format", "json", "--budget", budget, "--baseline", dump, dump}, 2},
		{[]string{"diff", dump, "--", dump}, 2},
		{[]string{"top", dump}, 1},
	} {
		var stdout, stderr bytes.Buffer
		code := run(c.args, nil, &stdout, &stderr, os.Getenv)
		if code == exitUsage {
			t.Fatalf("%s: exit %d: %s", c.args[0], code, stderr.String())
		}
		if strings.Contains(stdout.String(), warning) {
			t.Errorf("%q: the report repeats callgrind's warning:\n%s", c.args, stdout.String())
		}
		if n := strings.Count(stderr.String(), warning); n != c.files {
			t.Errorf("%q: callgrind's warning said %d times, want %d (once a file read):\n%s", c.args, n, c.files, stderr.String())
		}
	}
}
