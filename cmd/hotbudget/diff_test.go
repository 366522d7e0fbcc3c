package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The diff fixtures are folded stacks written by hand (testdata/cli/README.md):
// parse takes 400 of 1000 samples in base.folded and 600 of 1200 in
// head.folded, a share of 40% -> 50%; render and gc keep their counts.
func TestGoldenDiff(t *testing.T) {
	checkGolden(t, []cliCase{
		{name: "diff-pass", why: "identical sides: nothing regressed, exit 0", args: []string{"diff", "testdata/cli/base.folded", "--", "testdata/cli/base.folded"}},
		{name: "diff-regression", why: "parse's share grows 40% -> 50%: regressed, exit 1", args: []string{"diff", "testdata/cli/base.folded", "--", "testdata/cli/head.folded"}},
		{name: "diff-regression-json", why: "the JSON report machines read", args: []string{"diff", "--format", "json", "testdata/cli/base.folded", "--", "testdata/cli/head.folded"}},
		{name: "diff-regression-markdown", why: "Markdown for a PR comment", args: []string{"diff", "--format", "markdown", "testdata/cli/base.folded", "--", "testdata/cli/head.folded"}},
		{name: "diff-regression-github", why: "under GitHub Actions: summary appended and an ::error annotation naming the function", args: []string{"diff", "testdata/cli/base.folded", "--", "testdata/cli/head.folded"}, github: true},
		{name: "diff-runs-glob", why: "five runs a side by glob: Mann-Whitney flags parse", args: []string{"diff", "testdata/cli/runs/base-*.folded", "--", "testdata/cli/runs/head-*.folded"}},
		{name: "diff-absolute-total", why: "flags map to diff options", args: []string{"diff", "--metric", "total", "--mode", "absolute", "--min-change", "5%", "--min-time", "10ms", "testdata/cli/base.folded", "--", "testdata/cli/head.folded"}},
		{name: "diff-explain", why: "parse grows only when called through render: the explanation names that path and calls the load path unchanged", args: []string{"diff", "testdata/cli/explain-base.folded", "--", "testdata/cli/explain-head.folded"}},
		{name: "diff-explain-markdown", why: "the explanation folded under the table of the PR comment", args: []string{"diff", "--format", "markdown", "testdata/cli/explain-base.folded", "--", "testdata/cli/explain-head.folded"}},
		{name: "check-regression", why: "max_regression rules against five baseline runs: parse regressed, exit 1", args: []string{"check", "--budget", "testdata/budget/runs.yaml", "--baseline", "testdata/cli/runs/base-*.folded", "testdata/cli/runs/head-*.folded"}},
		{name: "check-regression-github", why: "under GitHub Actions the regression is annotated", args: []string{"check", "--budget", "testdata/budget/runs.yaml", "--baseline", "testdata/cli/runs/base-*.folded", "testdata/cli/runs/head-*.folded"}, github: true},
		{name: "bench-pass", why: "identical benchmark outputs: exit 0", args: []string{"bench", "testdata/cli/old.bench.txt", "testdata/cli/old.bench.txt"}},
		{name: "bench-regression", why: "BenchmarkParse 1000 -> 1300 ns/op over 5 runs: regressed, exit 1", args: []string{"bench", "testdata/cli/old.bench.txt", "testdata/cli/new.bench.txt"}},
		{name: "bench-regression-markdown", why: "Markdown for a PR comment", args: []string{"bench", "--format", "markdown", "testdata/cli/old.bench.txt", "testdata/cli/new.bench.txt"}},
		{name: "bench-regression-github", why: "under GitHub Actions: summary and an annotation naming the benchmark and unit", args: []string{"bench", "testdata/cli/old.bench.txt", "testdata/cli/new.bench.txt"}, github: true},
		{name: "bench-json", why: "the JSON report", args: []string{"bench", "--format", "json", "testdata/cli/old.bench.txt", "testdata/cli/new.bench.txt"}},
	})
}

// TestDiffPprof writes --pprof and reads it with go tool pprof: head's
// samples positive, base's negated, so parse's flat is 600-400 samples of 1ms.
func TestDiffPprof(t *testing.T) {
	inRepoRoot(t)
	out := filepath.Join(t.TempDir(), "diff.pb.gz")
	var stdout, stderr bytes.Buffer
	code := run([]string{"diff", "--pprof", out, "testdata/cli/base.folded", "--", "testdata/cli/head.folded"}, nil, &stdout, &stderr, os.Getenv)
	if code != exitFail {
		t.Fatalf("exit %d, want 1: %s", code, stderr.String())
	}
	top, err := exec.Command("go", "tool", "pprof", "-top", "-unit=ms", out).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, top)
	}
	found := false
	for _, line := range strings.Split(string(top), "\n") {
		f := strings.Fields(line)
		if len(f) == 6 && f[5] == "parse" {
			found = true
			if f[0] != "200ms" {
				t.Errorf("parse flat %s in the diff profile, want 200ms (600-400 samples of 1ms)\n%s", f[0], top)
			}
		}
		if len(f) == 6 && f[5] == "render" && f[0] != "0" {
			t.Errorf("render flat %s, want 0\n%s", f[0], top)
		}
	}
	if !found {
		t.Errorf("parse missing from go tool pprof -top:\n%s", top)
	}
}
