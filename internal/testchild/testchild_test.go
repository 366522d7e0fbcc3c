package testchild

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestChildHelper is the child process of TestRun: it prints RuntimeRateLine
// twice and another line on stderr, and fails when asked to.
func TestChildHelper(t *testing.T) {
	if os.Getenv(env) != t.Name() {
		t.Skip("the child process of TestRun, run only by it")
	}
	fmt.Fprintln(os.Stderr, RuntimeRateLine)
	fmt.Fprintln(os.Stderr, "something else")
	fmt.Fprintln(os.Stderr, RuntimeRateLine)
	if os.Getenv("TESTCHILD_FAIL") == "1" {
		t.Error("asked to fail")
	}
}

func TestRun(t *testing.T) {
	r := run("TestChildHelper", "1m", []string{RuntimeRateLine})
	if r.err != nil || r.dropped[RuntimeRateLine] != 2 || !slices.Equal(r.kept, []string{"something else"}) ||
		!strings.Contains(r.stdout, "--- PASS: TestChildHelper ") {
		t.Errorf("passing child: err %v, dropped %v, kept %q, stdout:\n%s", r.err, r.dropped, r.kept, r.stdout)
	}
	t.Setenv("TESTCHILD_FAIL", "1")
	r = run("TestChildHelper", "", nil)
	if r.err == nil || len(r.kept) != 3 || !strings.Contains(r.stdout, "asked to fail") {
		t.Errorf("failing child: err %v, kept %q, stdout:\n%s", r.err, r.kept, r.stdout)
	}
}

func TestRerunInChild(t *testing.T) {
	if Rerun(t, RuntimeRateLine) {
		return
	}
	if os.Getenv(env) != t.Name() {
		t.Error("the test body runs in the parent")
	}
}
