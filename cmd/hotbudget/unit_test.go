package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/ghactions"
)

func TestVersionFromBuildInfo(t *testing.T) {
	old := readBuildInfo
	t.Cleanup(func() { readBuildInfo = old })
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"go install module@v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true, "v1.2.3"},
		{"built in a checkout without VCS stamping", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, version},
		{"no build info", nil, false, version},
	} {
		readBuildInfo = func() (*debug.BuildInfo, bool) { return c.bi, c.ok }
		if got := versionString(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestParsePercent(t *testing.T) {
	for s, want := range map[string]float64{"10%": 0.10, "2.5%": 0.025, "0": 0, "50": 0.5} {
		if got, err := parsePercent(s); err != nil || got != want {
			t.Errorf("parsePercent(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "ten", "-5%", "NaN%"} {
		if _, err := parsePercent(s); err == nil {
			t.Errorf("parsePercent(%q): no error", s)
		}
	}
}

func TestGitHubEscapingAndPaths(t *testing.T) {
	if got := ghactions.Data("50% done\nnext"); got != "50%25 done%0Anext" {
		t.Errorf("ghData: %q", got)
	}
	if got := ghactions.Property("a:b,c%"); got != "a%3Ab%2Cc%25" {
		t.Errorf("ghProperty: %q", got)
	}
	env := map[string]string{"GITHUB_WORKSPACE": "/home/runner/work/app/app"}
	c := ghactions.Runner{Getenv: func(k string) string { return env[k] }}
	for in, want := range map[string]string{
		"/home/runner/work/app/app/internal/x.go":        "internal/x.go",
		"file:///home/runner/work/app/app/src/index.js":  "src/index.js",
		"/usr/local/go/src/runtime/proc.go":              "",
		"node:internal/main/run_main_module":             "",
		"https://example.com/app.js":                     "",
		"src/app.js":                                     "src/app.js",
		"":                                               "",
		"/home/runner/work/app/app-other/x.go":           "",
		"/home/runner/work/app/app/../app-other/main.go": "",
	} {
		if got := c.RepoPath(in); got != want {
			t.Errorf("repoPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNotOnGitHub: without GITHUB_ACTIONS=true nothing is written to the
// summary file and no annotation is printed.
func TestNotOnGitHub(t *testing.T) {
	inRepoRoot(t)
	summary := filepath.Join(t.TempDir(), "summary.md")
	env := map[string]string{"GITHUB_STEP_SUMMARY": summary}
	var stdout, stderr bytes.Buffer
	code := run([]string{"check", "--budget", "testdata/budget/busy-fail.yaml", "testdata/pprof/busy.pb.gz"}, nil, &stdout, &stderr, func(k string) string { return env[k] })
	if code != exitFail {
		t.Errorf("exit %d, want 1", code)
	}
	if strings.Contains(stderr.String(), "::error") {
		t.Errorf("annotation printed outside GitHub Actions: %s", stderr.String())
	}
	if _, err := os.Stat(summary); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("summary written outside GitHub Actions: %v", err)
	}
}

// TestBinaryExitCodes builds the command and checks that main passes run's
// exit codes to the process (the golden tests call run in-process).
func TestBinaryExitCodes(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hotbudget")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--version"}, 0},
		{[]string{"check", "--budget", "testdata/budget/busy-fail.yaml", "testdata/pprof/busy.pb.gz"}, 1},
		{[]string{"top", "--nope"}, 2},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code {
			t.Errorf("hotbudget %q: exit %d, want %d\n%s", c.args, code, c.code, out)
		}
		if c.args[0] == "--version" && !strings.HasPrefix(string(out), "hotbudget v") {
			t.Errorf("--version printed %q", out)
		}
	}
}
