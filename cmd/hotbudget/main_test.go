package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/cli and the browser tests' screenshots under testdata/html")

// repoRoot is where the CLI runs in these tests, so that file names in the
// output read as they would in the README.
const repoRoot = "../.."

// cliCase is one invocation of the CLI whose stdout, stderr and exit code are
// kept in testdata/cli/<name>.golden.
type cliCase struct {
	name   string
	why    string
	args   []string
	env    map[string]string
	github bool // run as under GitHub Actions with a fresh step summary file
}

// result is what one run of the CLI produced.
type result struct {
	stdout, stderr, summary string
	code                    int
}

func runCLI(t *testing.T, c cliCase) result {
	t.Helper()
	env := map[string]string{}
	for k, v := range c.env {
		env[k] = v
	}
	var summaryPath string
	if c.github {
		summaryPath = filepath.Join(t.TempDir(), "summary.md")
		env["GITHUB_ACTIONS"] = "true"
		env["GITHUB_STEP_SUMMARY"] = summaryPath
	}
	var stdout, stderr bytes.Buffer
	code := run(c.args, strings.NewReader(""), &stdout, &stderr, func(k string) string { return env[k] })
	r := result{stdout: stdout.String(), stderr: stderr.String(), code: code}
	if summaryPath != "" {
		b, err := os.ReadFile(summaryPath)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		r.summary = string(b)
	}
	return r
}

// golden renders a result as the text kept in a golden file.
func (r result) golden(c cliCase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", c.why)
	fmt.Fprintf(&b, "args: %q\n", c.args)
	fmt.Fprintf(&b, "exit: %d\n", r.code)
	fmt.Fprintf(&b, "-- stdout --\n%s", r.stdout)
	fmt.Fprintf(&b, "-- stderr --\n%s", r.stderr)
	if c.github {
		fmt.Fprintf(&b, "-- step summary --\n%s", r.summary)
	}
	return b.String()
}

// inRepoRoot runs the CLI from the repository root with a fixed version.
func inRepoRoot(t *testing.T) {
	t.Helper()
	t.Chdir(repoRoot)
	old := readBuildInfo
	readBuildInfo = func() (*debug.BuildInfo, bool) { return nil, false }
	t.Cleanup(func() { readBuildInfo = old })
}

func checkGolden(t *testing.T, cases []cliCase) {
	t.Helper()
	inRepoRoot(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := runCLI(t, c).golden(c)
			path := filepath.Join("testdata", "cli", c.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/hotbudget -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the golden file (go test ./cmd/hotbudget -update rewrites it)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
			}
		})
	}
}

func TestGoldenBasics(t *testing.T) {
	checkGolden(t, []cliCase{
		{name: "help", why: "the tool's usage goes to stdout with exit 0", args: []string{"--help"}},
		{name: "no-args", why: "no command is a usage error: usage on stderr, exit 2", args: nil},
		{name: "version", why: "--version prints the source version when there is no module version", args: []string{"--version"}},
		{name: "version-cmd", why: "the version subcommand says the same", args: []string{"version"}},
		{name: "unknown-flag", why: "an unknown flag is a usage error naming the flag", args: []string{"top", "--frobnicate", "testdata/pprof/busy.pb.gz"}},
		{name: "unknown-command", why: "an unknown command is a usage error", args: []string{"frobnicate"}},
		{name: "unknown-tool-flag", why: "an unknown flag before the command is a usage error", args: []string{"--frobnicate"}},
		{name: "help-top", why: "every subcommand has --help with examples", args: []string{"top", "--help"}},
		{name: "help-convert", why: "every subcommand has --help with examples", args: []string{"convert", "-h"}},
		{name: "help-diff", why: "every subcommand has --help with examples", args: []string{"diff", "--help"}},
		{name: "help-bench", why: "every subcommand has --help with examples", args: []string{"bench", "--help"}},
		{name: "help-check", why: "every subcommand has --help with examples", args: []string{"check", "--help"}},
		{name: "help-record", why: "every subcommand has --help with examples", args: []string{"record", "--help"}},
		{name: "help-version", why: "every subcommand has --help", args: []string{"help", "version"}},
	})
}

func TestGoldenTop(t *testing.T) {
	checkGolden(t, []cliCase{
		{name: "top-pprof-text", why: "pprof-like columns for a real Go CPU profile", args: []string{"top", "testdata/pprof/busy.pb.gz"}},
		{name: "top-pprof-json", why: "the stable JSON schema, every function with -n 0", args: []string{"top", "-n", "0", "--format", "json", "testdata/pprof/busy.pb.gz"}},
		{name: "top-cpuprofile-markdown", why: "Markdown for a Node profile; flags after the file are accepted", args: []string{"top", "testdata/cpuprofile/busy.cpuprofile", "-n", "5", "--format", "markdown"}},
		{name: "top-cpuprofile-focus", why: "--focus keeps samples through matching functions; shares stay of the whole profile", args: []string{"top", "--focus", "^busyLoop$", "--drop-synthetic", "testdata/cpuprofile/busy.cpuprofile"}},
		{name: "top-missing-file", why: "an unreadable profile is an input error naming the file", args: []string{"top", "testdata/cli/no-such-profile.pb.gz"}},
		{name: "top-garbage", why: "a malformed profile is an input error naming the file and the format", args: []string{"top", "testdata/cli/truncated.pb.gz"}},
		{name: "top-bad-format", why: "--format takes a closed set of values", args: []string{"top", "--format", "yaml", "testdata/pprof/busy.pb.gz"}},
		{name: "top-bad-regexp", why: "a bad --focus regexp is a usage error", args: []string{"top", "--focus", "(", "testdata/pprof/busy.pb.gz"}},
		{name: "top-thread", why: "--thread selects one speedscope profile: hand-worked c 5s, d 4s, b 5s self of 14s", args: []string{"top", "--thread", "two", "testdata/corpus/speedscope/two-sampled.speedscope.json"}},
		{name: "top-pid", why: "--pid matches the pid from Node's file name", args: []string{"top", "-n", "3", "--pid", "4242", "testdata/cli/CPU.20261122.235500.4242.1.001.cpuprofile"}},
		{name: "top-pid-none", why: "a pid with no samples is an input error listing what the file has", args: []string{"top", "--pid", "99", "testdata/cli/CPU.20261122.235500.4242.1.001.cpuprofile"}},
		{name: "top-chrome-thread", why: "a Chrome trace: --thread picks the worker's CPU profile by thread name", args: []string{"top", "-n", "5", "--thread", "DedicatedWorker thread", "testdata/corpus/chrome-trace/worker.json.gz"}},
		{name: "top-chrome-tid-json", why: "--thread also takes a tid; JSON for the main thread", args: []string{"top", "-n", "3", "--format", "json", "--thread", "775", "testdata/corpus/chrome-trace/worker.json.gz"}},
		{name: "top-trace-durations-pid", why: "duration events of one process (--view durations --pid)", args: []string{"top", "--view", "durations", "--pid", "1", "testdata/corpus/trace-event/multiprocess.json"}},
		{name: "top-chrome-thread-none", why: "an unknown thread lists the file's processes and threads", args: []string{"top", "--thread", "nope", "testdata/corpus/chrome-trace/worker.json.gz"}},
		{name: "top-callgrind", why: "callgrind: exact instruction counts; self as callgrind_annotate, total as --inclusive=yes except on recursion cycles (each stack counted once)", args: []string{"top", "-n", "6", "testdata/callgrind/c.callgrind.gz"}},
		{name: "top-two-files", why: "top reads exactly one profile", args: []string{"top", "testdata/pprof/busy.pb.gz", "testdata/cpuprofile/busy.cpuprofile"}},
	})
}

func TestGoldenCheck(t *testing.T) {
	busy := "testdata/pprof/busy.pb.gz"
	checkGolden(t, []cliCase{
		{name: "check-pass", why: "every rule passes: exit 0, every rule's result printed", args: []string{"check", "--budget", "testdata/budget/busy.yaml", busy}},
		{name: "check-pass-json-budget", why: "the same budget in JSON gives the same results", args: []string{"check", "--budget", "testdata/budget/busy.json", busy}},
		{name: "check-fail", why: "broken limits and a misspelt function: exit 1, did-you-mean hint", args: []string{"check", "--budget", "testdata/budget/busy-fail.yaml", busy}},
		{name: "check-fail-json", why: "the JSON schema machines read", args: []string{"check", "--format", "json", "--budget", "testdata/budget/busy-fail.yaml", busy}},
		{name: "check-fail-markdown", why: "Markdown for a PR comment", args: []string{"check", "--format", "markdown", "--budget", "testdata/budget/busy-fail.yaml", busy}},
		{name: "check-fail-github", why: "under GitHub Actions: job summary appended, ::error annotations naming the function with a repository-relative file",
			args: []string{"check", "--budget", "testdata/budget/busy-fail.yaml", busy}, github: true,
			env: map[string]string{"GITHUB_WORKSPACE": "/work/main"}},
		{name: "check-pass-github", why: "under GitHub Actions a pass writes the summary and no annotation", args: []string{"check", "--budget", "testdata/budget/busy.yaml", busy}, github: true},
		{name: "check-runs-glob", why: "several runs by glob; limits apply to the mean", args: []string{"check", "--budget", "testdata/budget/busy.yaml", "testdata/pprof/*.pb.gz", busy}},
		{name: "check-malformed-budget", why: "a malformed budget file: exit 2, every error with file:line", args: []string{"check", "--budget", "testdata/budget/malformed.yaml", busy}},
		{name: "check-missing-budget", why: "an unreadable budget file names the file", args: []string{"check", "--budget", "testdata/budget/nope.yaml", busy}},
		{name: "check-no-budget-flag", why: "--budget is required", args: []string{"check", busy}},
		{name: "check-unreadable-profile", why: "an unreadable profile: exit 2 naming the file", args: []string{"check", "--budget", "testdata/budget/busy.yaml", "testdata/cli/truncated.pb.gz"}},
		{name: "check-glob-no-match", why: "a glob matching nothing is an input error", args: []string{"check", "--budget", "testdata/budget/busy.yaml", "testdata/nothing/*.pb.gz"}},
		{name: "check-regression-no-baseline", why: "a max_regression rule needs --baseline", args: []string{"check", "--budget", "testdata/budget/regression.yaml", busy}},
		{name: "check-per-op-pass", why: "per-op limits on profiles record wrote: kv.mix 2.02s over 67680 ops is 29.85µs an op (testdata/record/README.md)", args: []string{"check", "--budget", "testdata/budget/perop.yaml", "testdata/record/base/*.pb.gz"}},
		{name: "check-per-op-fail", why: "head: kv.mix 3.15s over 67680 ops is 46.54µs an op, over 40µs", args: []string{"check", "--budget", "testdata/budget/perop.yaml", "testdata/record/head/*.pb.gz"}},
		{name: "check-per-op-no-work", why: "a go test -cpuprofile profile records no work: per-op limits are an error saying where such profiles come from", args: []string{"check", "--budget", "testdata/budget/perop.yaml", busy}},
	})
}

func TestGoldenDiffUsage(t *testing.T) {
	busy := "testdata/pprof/busy.pb.gz"
	checkGolden(t, []cliCase{
		{name: "diff-no-separator", why: "the sides must be separated by --", args: []string{"diff", busy, busy}},
		{name: "diff-empty-side", why: "each side needs a profile", args: []string{"diff", busy, "--"}},
		{name: "diff-bad-alpha", why: "options are checked before any file is read", args: []string{"diff", "--alpha", "2", busy, "--", busy}},
		{name: "diff-per-op-no-anchor", why: "per-op mode needs an anchor", args: []string{"diff", "--mode", "per-op", busy, "--", busy}},
		{name: "diff-bad-min-change", why: "percentages are parsed strictly", args: []string{"diff", "--min-change", "ten", busy, "--", busy}},
		{name: "diff-bad-only", why: "--only is a regexp, checked before any file is read", args: []string{"diff", "--only", "(", busy, "--", busy}},
		{name: "diff-bad-assume", why: "--assume takes model, nothing or normal", args: []string{"diff", "--assume", "lognormal", busy, "--", busy}},
		{name: "diff-unreadable-profile", why: "an unreadable profile: exit 2 naming the file", args: []string{"diff", busy, "--", "testdata/cli/truncated.pb.gz"}},
		{name: "diff-unknown-flag", why: "an unknown flag is a usage error", args: []string{"diff", "--sigma", "3", busy, "--", busy}},
		{name: "diff-html-unwritable", why: "an --html file that cannot be written: exit 2 naming it", args: []string{"diff", "--html", "testdata/cli/no-such-dir/report.html", "testdata/cli/base.folded", "--", "testdata/cli/base.folded"}},
		{name: "bench-one-file", why: "bench wants OLD and NEW", args: []string{"bench", "old.txt"}},
		{name: "bench-missing-file", why: "a missing file names the file", args: []string{"bench", "testdata/cli/no-old.txt", "testdata/cli/no-new.txt"}},
		{name: "bench-bad-ignore", why: "--ignore takes configuration keys", args: []string{"bench", "--ignore", "cpu,Goos", "testdata/cli/old.bench.txt", "testdata/cli/new.bench.txt"}},
	})
}
