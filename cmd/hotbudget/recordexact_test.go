package main

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
)

// TestRecordInstructions records the revisions of gitRepo with
// --instructions: the README commit changes no function's count (exit 0),
// and checksum's 12 rounds instead of 8 make it execute 1.5 times its
// instructions, which the gate names alone (exit 1), the verdict in the
// report's first and last lines.
func TestRecordInstructions(t *testing.T) {
	testutil.Slow(t, "builds two revisions twice and counts a benchmark under valgrind eight times")
	for _, tool := range []string{"git", "valgrind"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	repo := gitRepo(t)
	same := recordIn(t, repo, "--instructions", "HEAD~2", "HEAD~1")
	if same.code != 0 || !strings.HasPrefix(same.stdout, "no function executes more instructions in 1 benchmark") {
		t.Errorf("README commit: exit %d\n%s", same.code, same.stdout)
	}
	slower := recordIn(t, repo, "--instructions", "--format", "text", "HEAD~1", "HEAD")
	if slower.code != 1 {
		t.Fatalf("checksum with 12 rounds: exit %d, want 1\n%s", slower.code, slower.stdout)
	}
	lines := strings.Split(strings.TrimSpace(slower.stdout), "\n")
	first, last := lines[0], lines[len(lines)-1]
	if !strings.HasPrefix(first, "1 of 1 benchmarks execute more instructions: BenchmarkProcess: regressed rec.checksum +") ||
		!strings.HasPrefix(last, first) || !strings.HasSuffix(last, "exit status 1") {
		t.Errorf("first and last lines disagree with exit 1:\n%s\n...\n%s", first, last)
	}
	if n := strings.Count(slower.stdout, "  regressed "); n != 1 {
		t.Errorf("%d functions regressed, want checksum alone:\n%s", n, slower.stdout)
	}
	m := regexp.MustCompile(`regressed example.com/rec.checksum: (\d+) -> (\d+) instructions`).FindStringSubmatch(slower.stdout)
	if m == nil {
		t.Fatalf("no checksum row:\n%s", slower.stdout)
	}
	b, _ := strconv.ParseFloat(m[1], 64)
	h, _ := strconv.ParseFloat(m[2], 64)
	// 8 rounds of the buffer's 8,192 bytes, then 12: the loop's
	// instructions 1.5 times over, the call's few once.
	if r := h / b; r < 1.49 || r > 1.5 || b < 8*8192 {
		t.Errorf("checksum: %v -> %v instructions per op, ratio %.4f, want 1.5 (12 rounds for 8)", b, h, r)
	}
}

// TestShortName checks the names the verdict lines give functions: the
// last path element, with the one before a major version's.
func TestShortName(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/blang/semver/v4.Parse": "semver/v4.Parse",
		"example.com/rec.checksum":         "rec.checksum",
		"example.com/m/v2/parse.(*P).next": "parse.(*P).next",
		"example.com/vendor.Fn":            "vendor.Fn",
		"main.main":                        "main.main",
		"example.com/m/v10.Fn":             "m/v10.Fn",
	} {
		if got := shortName(in); got != want {
			t.Errorf("shortName(%q) = %q, want %q", in, got, want)
		}
	}
}
