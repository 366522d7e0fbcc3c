// Package github holds hotbudget's example GitHub Actions workflow,
// perf-gate.yml, and the test that runs it here.
package github

import (
	"errors"
	"go/version"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/srcdeps"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/loaders"
	"go.yaml.in/yaml/v3"
)

type workflow struct {
	Name        string            `yaml:"name"`
	On          map[string]any    `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Jobs        map[string]struct {
		RunsOn   string            `yaml:"runs-on"`
		Env      map[string]string `yaml:"env"`
		Strategy struct {
			Matrix map[string][]string `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Name string            `yaml:"name"`
			If   string            `yaml:"if"`
			Uses string            `yaml:"uses"`
			With map[string]string `yaml:"with"`
			Run  string            `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func loadWorkflow(t *testing.T) workflow {
	t.Helper()
	data, err := os.ReadFile("perf-gate.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true) // a misspelt key is an error, as on GitHub
	if err := dec.Decode(&wf); err != nil {
		t.Fatalf("perf-gate.yml is not a workflow of the shape GitHub Actions accepts: %v", err)
	}
	return wf
}

// TestWorkflowShape checks what GitHub Actions would reject or silently
// ignore: triggers, a runner, steps that either use a pinned action or run a
// script, and expressions we know how to evaluate.
func TestWorkflowShape(t *testing.T) {
	wf := loadWorkflow(t)
	if wf.Name == "" {
		t.Error("workflow has no name")
	}
	if _, ok := wf.On["pull_request"]; !ok {
		t.Errorf("workflow does not run on pull_request: on = %v", wf.On)
	}
	if len(wf.Jobs) == 0 {
		t.Fatal("workflow has no jobs")
	}
	pinned := regexp.MustCompile(`^[\w-]+/[\w-]+@v\d+$`)
	for id, job := range wf.Jobs {
		if job.RunsOn == "" {
			t.Errorf("job %s: no runs-on", id)
		}
		if len(job.Steps) == 0 {
			t.Errorf("job %s: no steps", id)
		}
		for i, s := range job.Steps {
			if (s.Uses == "") == (s.Run == "") {
				t.Errorf("job %s step %d: needs exactly one of uses and run", id, i)
			}
			if s.Uses != "" && !pinned.MatchString(s.Uses) {
				t.Errorf("job %s step %d: action %q is not pinned to a major version", id, i, s.Uses)
			}
			if s.If != "" && s.If != "always()" {
				t.Errorf("job %s step %d: condition %q: this test runs every step, so only always() is known to hold", id, i, s.If)
			}
		}
	}
}

// TestExactBaselinesPerRelease checks the exact job against the baselines
// it judges: each Go version of its matrix is the one that counted its
// release's baselines in examples/baseline/testdata/<release>/ (a baseline
// counted by another version is refused), and every release there is one
// the matrix runs. The job runs its tests under the matrix's version.
func TestExactBaselinesPerRelease(t *testing.T) {
	wf := loadWorkflow(t)
	job, ok := wf.Jobs["exact"]
	if !ok {
		t.Fatal("no exact job")
	}
	versions := job.Strategy.Matrix["go"]
	if len(versions) < 2 {
		t.Errorf("the exact job's matrix runs Go %q: want the supported releases", versions)
	}
	setup := false
	for _, s := range job.Steps {
		if strings.HasPrefix(s.Uses, "actions/setup-go@") {
			setup = s.With["go-version"] == "${{ matrix.go }}"
		}
	}
	if !setup {
		t.Error("the exact job does not set up the matrix's Go version (go-version: ${{ matrix.go }})")
	}
	var releases []string
	for _, v := range versions {
		if !regexp.MustCompile(`^1\.\d+\.\d+$`).MatchString(v) {
			t.Errorf("matrix version %q is not an exact Go version (1.26.8): a baseline holds for one", v)
			continue
		}
		goVersion := "go" + v
		release := version.Lang(goVersion)
		releases = append(releases, release)
		for _, name := range []string{"parse.instructions.pb.gz", "parse.race.instructions.pb.gz"} {
			path := filepath.Join("..", "baseline", "testdata", release, name)
			p, err := loaders.Load(path)
			if err != nil {
				t.Errorf("Go %s: %v", v, err)
				continue
			}
			r, _ := meta.Known(p)
			if got := r.Depends["go"]; got != goVersion {
				t.Errorf("%s was counted by %s, and the exact job runs it under %s: record it again with\n    GOTOOLCHAIN=%s HOTBUDGET_UPDATE=1 go test%s -run Instructions ./examples/baseline",
					path, got, goVersion, goVersion, map[bool]string{true: " -race"}[strings.Contains(name, ".race.")])
			}
		}
	}
	dirs, err := filepath.Glob(filepath.Join("..", "baseline", "testdata", "go*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !slices.Contains(releases, filepath.Base(d)) {
			t.Errorf("%s holds baselines of a release the exact job does not run", d)
		}
	}
}

// expressions are the ${{ }} expressions the workflow may use and what they
// stand for when the workflow runs here: the pull request's base is the
// commit checked out.
var expressions = map[string]string{
	"github.event.pull_request.base.sha": "HEAD",
}

// TestWorkflowRuns runs every script of the workflow, in order, from the
// repository root, with the environment GitHub Actions would give it: the
// base branch is this checkout's HEAD, so the gate compares the code with
// itself (an A/A run) and must pass, and the budget must hold.
func TestWorkflowRuns(t *testing.T) {
	testutil.Slow(t, "runs the example workflow: builds hotbudget and profiles a benchmark ten times")
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	wf := loadWorkflow(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	srcdeps.Track(t, root) // the workflow builds hotbudget and the benchmark from these
	runner := t.TempDir()
	summary := filepath.Join(runner, "summary.md")
	t.Cleanup(func() {
		// The base-branch step adds a worktree; remove it from the repository.
		exec.Command("git", "-C", root, "worktree", "remove", "--force", filepath.Join(runner, "base-src")).Run()
		exec.Command("git", "-C", root, "worktree", "prune").Run()
	})
	expr := regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)
	var uploads []string
	for id, job := range wf.Jobs {
		env := append(os.Environ(),
			"RUNNER_TEMP="+runner,
			"GITHUB_ACTIONS=true",
			"GITHUB_STEP_SUMMARY="+summary,
			"GITHUB_SERVER_URL=https://github.com",
			"GITHUB_REPOSITORY=hotbudget/hotbudget",
			"GITHUB_RUN_ID=1",
		)
		for k, v := range job.Env {
			v = expr.ReplaceAllStringFunc(v, func(m string) string {
				name := expr.FindStringSubmatch(m)[1]
				val, ok := expressions[name]
				if !ok {
					t.Fatalf("job %s: env %s uses ${{ %s }}, which this test cannot evaluate", id, k, name)
				}
				return val
			})
			env = append(env, k+"="+v)
		}
		for _, s := range job.Steps {
			if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
				// What it uploads must exist once the steps before it ran.
				uploads = append(uploads, strings.ReplaceAll(s.With["path"], "${{ runner.temp }}", runner))
			}
			if s.Run == "" {
				continue // actions/checkout and setup-go: this checkout and this Go
			}
			if expr.MatchString(s.Run) {
				t.Fatalf("step %q: put ${{ }} expressions in env, not in the script", s.Name)
			}
			run := func() ([]byte, error) {
				cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s.Run)
				cmd.Dir = root
				cmd.Env = env
				return cmd.CombinedOutput()
			}
			out, err := run()
			var exit *exec.ExitError
			if err != nil && errors.As(err, &exit) && exit.ExitCode() == 1 && strings.Contains(s.Run, " record ") {
				// The gate said "regressed" on identical code. A
				// statistical gate does that at its false-alarm rate
				// (about 5% here: the benchmark's wall time with
				// 5 runs a side, and the functions): once is chance,
				// twice in a row (≤ 0.25%) a broken gate. Record
				// anew into a fresh directory.
				t.Logf("step %q: the A/A gate failed once, as it may by design; running it again:\n%s", s.Name, out)
				if err := os.RemoveAll(filepath.Join(runner, "perf")); err != nil {
					t.Fatal(err)
				}
				out, err = run()
			}
			if err != nil {
				t.Fatalf("step %q failed: %v\n%s", s.Name, err, out)
			}
			t.Logf("step %q:\n%s", s.Name, out)
		}
	}
	b, err := os.ReadFile(summary)
	if err != nil || len(b) == 0 {
		t.Fatalf("the gate wrote no job summary to $GITHUB_STEP_SUMMARY (%v)", err)
	}
	// The HTML report is uploaded, and the summary says where to find it.
	if len(uploads) == 0 {
		t.Error("the workflow uploads no artifact: the HTML report is lost with the runner")
	}
	for _, path := range uploads {
		page, err := os.ReadFile(path)
		if err != nil || !strings.HasPrefix(string(page), "<!DOCTYPE html>") {
			t.Errorf("artifact %s is not an HTML report (%v)", path, err)
		}
	}
	if !strings.Contains(string(b), "**perf-report** artifact of this run (https://github.com/hotbudget/hotbudget/actions/runs/1#artifacts)") {
		t.Errorf("the job summary does not say where the HTML report is:\n%s", b)
	}
}
