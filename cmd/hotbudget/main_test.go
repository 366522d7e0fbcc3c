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

var update = flag.Bool("update", false, "rewrite the golden files under testdata/cli")

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
		{name: "top-two-files", why: "top reads exactly one profile", args: []string{"top", "testdata/pprof/busy.pb.gz", "testdata/cpuprofile/busy.cpuprofile"}},
	})
}
