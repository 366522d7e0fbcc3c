package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
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
		{name: "diff-anchor-github", why: "per handler call under GitHub Actions: the annotation shows the ratios the table shows (it said self 0 -> 0)", args: []string{"diff", "--anchor", "handler", "--min-change", "5%", "testdata/cli/runs/base-*.folded", "--", "testdata/cli/runs/head-*.folded"}, github: true},
		{name: "diff-unrelated", why: "a Go profile against a Node one: refused, exit 2, naming both files", args: []string{"diff", "testdata/pprof/busy.pb.gz", "--", "testdata/cpuprofile/busy.cpuprofile"}},
		{name: "diff-runs-glob", why: "five runs a side by glob: Mann-Whitney flags parse", args: []string{"diff", "testdata/cli/runs/base-*.folded", "--", "testdata/cli/runs/head-*.folded"}},
		{name: "diff-rename", why: "parse renamed parseFast in head: --rename judges them as one, the very verdict of diff-regression", args: []string{"diff", "--rename", "parse=parseFast", "testdata/cli/base.folded", "--", "testdata/cli/head-renamed.folded"}},
		{name: "diff-rename-bad", why: "--rename without = is a usage error", args: []string{"diff", "--rename", "parse", "testdata/cli/base.folded", "--", "testdata/cli/head-renamed.folded"}},
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
		{name: "bench-packages", why: "real go test ./... output, BenchmarkParse in two packages, kv's 50% slower: kv flagged alone, by package (testdata/benchpkg)", args: []string{"bench", "testdata/benchpkg/base.txt", "testdata/benchpkg/head.txt"}},
		{name: "bench-packages-markdown", why: "a package column in Markdown", args: []string{"bench", "--format", "markdown", "testdata/benchpkg/base.txt", "testdata/benchpkg/head.txt"}},
		{name: "bench-packages-github", why: "the annotation names the package", args: []string{"bench", "testdata/benchpkg/base.txt", "testdata/benchpkg/head.txt"}, github: true},
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
	top, err := testutil.PprofCmd("-top", "-unit=ms", out).CombinedOutput()
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

// TestHTMLFiles: --format html to stdout, --out FILE (stdout then shows the
// text report), and --html FILE besides another format, for diff and top.
func TestHTMLFiles(t *testing.T) {
	inRepoRoot(t)
	dir := t.TempDir()
	sides := []string{"testdata/cli/explain-base.folded", "--", "testdata/cli/explain-head.folded"}
	isPage := func(what, s string) {
		t.Helper()
		if !strings.HasPrefix(s, "<!DOCTYPE html>") || !strings.Contains(s, `id="hb-canvas"`) || !strings.HasSuffix(s, "</html>\n") {
			t.Errorf("%s is not a complete HTML report with a flame graph: %.200q", what, s)
		}
	}
	cases := []struct {
		args      []string
		code      int
		stdout    string // a line stdout must hold; "page" for an HTML page
		file      string // written as an HTML page
		notStdout string
	}{
		{args: append([]string{"diff", "--format", "html"}, sides...), code: exitFail, stdout: "page"},
		{args: append([]string{"diff", "--format", "html", "--out", filepath.Join(dir, "a.html")}, sides...), code: exitFail,
			stdout: "parse: +25.0% of the +25.0% comes through main → handler → render → parse; the path main → load → parse is unchanged", file: "a.html"},
		{args: append([]string{"diff", "--format", "json", "--html", filepath.Join(dir, "b.html")}, sides...), code: exitFail,
			stdout: `  "schema": "hotbudget.diff/v3",`, file: "b.html"},
		{args: []string{"top", "--format", "html", "testdata/pprof/busy.pb.gz"}, code: exitOK, stdout: "page"},
		{args: []string{"top", "--format", "html", "--out", filepath.Join(dir, "c.html"), "testdata/pprof/busy.pb.gz"}, code: exitOK,
			stdout: "File: testdata/pprof/busy.pb.gz", file: "c.html"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := run(c.args, nil, &stdout, &stderr, func(string) string { return "" })
		if code != c.code {
			t.Errorf("%q: exit %d, want %d: %s", c.args, code, c.code, stderr.String())
			continue
		}
		if c.stdout == "page" {
			isPage(fmt.Sprintf("stdout of %q", c.args), stdout.String())
		} else if !strings.Contains(stdout.String(), c.stdout+"\n") {
			t.Errorf("%q: stdout lacks %q:\n%s", c.args, c.stdout, stdout.String())
		}
		if c.file != "" {
			b, err := os.ReadFile(filepath.Join(dir, c.file))
			if err != nil {
				t.Fatal(err)
			}
			isPage(c.file, string(b))
		}
	}
}

// TestDiffHeadArgsAreFiles: everything after "--" is a head profile. A
// glob the shell expands in a directory holding a file named
// "-only=nothing.folded" must not turn it into --only, which would judge no
// function and pass the regression of head.folded.
func TestDiffHeadArgsAreFiles(t *testing.T) {
	base, err := filepath.Abs("../../testdata/cli/base.folded")
	if err != nil {
		t.Fatal(err)
	}
	head, err := os.ReadFile("../../testdata/cli/head.folded")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"-only=nothing.folded", "head.folded"} {
		if err := os.WriteFile(filepath.Join(dir, name), head, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	hbRun := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(args, nil, &stdout, &stderr, func(string) string { return "" })
		return code, stdout.String(), stderr.String()
	}
	diffRun := func(args ...string) (int, string, string) { return hbRun(append([]string{"diff"}, args...)...) }
	// As sh expands: diff base -- *.folded.
	code, stdout, stderr := diffRun(base, "--", "-only=nothing.folded", "head.folded")
	if code != exitFail || !strings.Contains(stdout, "regressed: parse") {
		t.Errorf("head profile named -only=...: exit %d, want 1 with parse regressed\n%s%s", code, stdout, stderr)
	}
	// The same glob, unexpanded, which hotbudget expands.
	if code, stdout, stderr := diffRun(base, "--", "*.folded"); code != exitFail || !strings.Contains(stdout, "regressed: parse") {
		t.Errorf("glob: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	// A flag after "--" is a file that does not exist: said so, exit 2.
	code, _, stderr = diffRun(base, "--", "head.folded", "--only", "nothing")
	if code != exitUsage || !strings.Contains(stderr, "--only: no such head profile: everything after -- is a head profile; flags go before --") {
		t.Errorf("flag after --: exit %d, want 2\n%s", code, stderr)
	}
	// The other commands that take files after "--" read them as files.
	if code, stdout, stderr := hbRun("top", "--", "-only=nothing.folded"); code != exitOK || !strings.Contains(stdout, "parse") {
		t.Errorf("top -- -only=nothing.folded: exit %d, want 0 and its functions\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := hbRun("convert", "--to", "folded", "--", "-only=nothing.folded", "-"); code != exitOK || !strings.Contains(stdout, "parse") {
		t.Errorf("convert -- -only=nothing.folded -: exit %d, want 0\n%s%s", code, stdout, stderr)
	}
	// Flags before "--" still apply, among the base profiles too.
	if code, _, stderr := diffRun(base, "--only", "^render$", "--", "head.folded"); code != exitOK {
		t.Errorf("--only among the base profiles: exit %d, want 0\n%s", code, stderr)
	}
}

// --min-time is a time: the modes that compare shares would ignore it, so
// they refuse it; with --mode absolute it is diff's minimum time change.
func TestMinTimeOnlyInAbsoluteMode(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--min-time", "2ms"}, false},
		{[]string{"--mode", "share", "--min-time", "2ms"}, false},
		{[]string{"--mode", "per-op", "--anchor", "main", "--min-time", "2ms"}, false},
		{[]string{"--mode", "absolute", "--min-time", "2ms"}, true},
		{[]string{"--min-change", "5%"}, true},
	} {
		fs := flag.NewFlagSet("diff", flag.ContinueOnError)
		d := addDiffFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		_, err := d.options(fs, nil)
		if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), "--min-time applies with --mode absolute") {
			t.Errorf("%q: err = %v, want ok %v", c.args, err, c.ok)
		}
	}
}
