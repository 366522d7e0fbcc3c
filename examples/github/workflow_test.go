// Package github holds hotbudget's example GitHub Actions workflow,
// perf-gate.yml, and the test that runs it here.
package github

import (
	"errors"
	"fmt"
	"go/version"
	"maps"
	"os"
	"os/exec"
	"path"
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
	Jobs        map[string]job    `yaml:"jobs"`
}

type job struct {
	If          string            `yaml:"if"`
	Needs       string            `yaml:"needs"`
	RunsOn      string            `yaml:"runs-on"`
	Permissions map[string]string `yaml:"permissions"`
	Env         map[string]string `yaml:"env"`
	Strategy    struct {
		FailFast *bool               `yaml:"fail-fast"`
		Matrix   map[string][]string `yaml:"matrix"`
	} `yaml:"strategy"`
	Steps []step `yaml:"steps"`
}

type step struct {
	Name string            `yaml:"name"`
	If   string            `yaml:"if"`
	Uses string            `yaml:"uses"`
	With map[string]string `yaml:"with"`
	Run  string            `yaml:"run"`
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
			if _, err := condition(s.If, "pull_request"); err != nil {
				t.Errorf("job %s step %d: %v", id, i, err)
			}
		}
		if _, err := condition(job.If, "pull_request"); err != nil {
			t.Errorf("job %s: %v", id, err)
		}
		if _, ok := wf.Jobs[job.Needs]; job.Needs != "" && !ok {
			t.Errorf("job %s needs %q, which is no job", id, job.Needs)
		}
	}
	if _, ok := wf.On["push"]; !ok {
		t.Errorf("workflow does not run on push (to main: the sharded jobs append to the history): on = %v", wf.On)
	}
}

// condition evaluates an if: of the workflow for an event: the
// conditions it uses (terms joined by &&), and no others, so that what
// the test runs is what GitHub would.
func condition(cond, event string) (bool, error) {
	if cond == "" {
		return true, nil
	}
	ok := true
	for _, term := range strings.Split(cond, "&&") {
		switch term = strings.TrimSpace(term); term {
		case "always()":
		case "github.event_name == 'push'":
			ok = ok && event == "push"
		case "github.event_name == 'pull_request'":
			ok = ok && event == "pull_request"
		default:
			return false, fmt.Errorf("condition %q: this test knows always() and github.event_name == 'push' or 'pull_request'", cond)
		}
	}
	return ok, nil
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
// stand for when the workflow runs here as a pull request: its base is the
// commit checked out. matrix.K is the job's matrix value; runner.temp the
// runner's directory.
var expressions = map[string]string{
	"github.event.pull_request.base.sha": "HEAD",
	"github.event.before":                "", // a push's: none in a pull request
}

// TestWorkflowRuns runs every job of the workflow, in the order of their
// needs, each matrix value of a job whose environment names the matrix
// once, every script in order from the repository root, with the
// environment GitHub Actions would give it, as a pull request whose base
// is this checkout's HEAD: the gates compare the code with itself (an A/A
// run) and must pass, and the budget must hold. Artifacts are uploaded to
// and downloaded from a directory. The steps that run on a push to main
// (the history's) then run in a clone of the repository at HEAD, whose
// origin is a bare repository, and must leave the record of HEAD there.
func TestWorkflowRuns(t *testing.T) {
	testutil.Slow(t, "runs the example workflow: builds hotbudget and profiles a benchmark thirty times")
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
		// record adds worktrees and removes them; prune what a failure left.
		exec.Command("git", "-C", root, "worktree", "prune").Run()
	})
	expr := regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)
	eval := func(where, s string, matrix map[string]string) string {
		return expr.ReplaceAllStringFunc(s, func(m string) string {
			for _, name := range strings.Split(expr.FindStringSubmatch(m)[1], "||") {
				name = strings.TrimSpace(name)
				if k, ok := strings.CutPrefix(name, "matrix."); ok {
					if v, ok := matrix[k]; ok {
						return v
					}
				} else if name == "runner.temp" {
					return runner
				} else if v, ok := expressions[name]; ok {
					if v != "" {
						return v
					}
					continue
				}
				t.Fatalf("%s uses ${{ %s }}, which this test cannot evaluate", where, name)
			}
			return ""
		})
	}
	uploads := map[string]string{} // artifact name -> path
	var pushSteps []struct {
		env []string
		s   step
	}
	// runJob runs job id once per matrix value; it reports whether a gate
	// (record or merge) failed, exit 1, which an A/A run may by design.
	runJob := func(id string, event string) (gateFailed bool) {
		job := wf.Jobs[id]
		matrices := []map[string]string{nil}
		for k, vs := range job.Strategy.Matrix {
			named := false
			for _, v := range job.Env {
				named = named || strings.Contains(v, "matrix."+k)
			}
			if !named {
				continue // the exact job's Go versions: this Go runs it once
			}
			matrices = nil
			for _, v := range vs {
				matrices = append(matrices, map[string]string{k: v})
			}
		}
		for _, matrix := range matrices {
			env := append(os.Environ(),
				"RUNNER_TEMP="+runner,
				"GITHUB_ACTIONS=true",
				"GITHUB_EVENT_NAME="+event,
				"GITHUB_STEP_SUMMARY="+summary,
				"GITHUB_SERVER_URL=https://github.com",
				"GITHUB_REPOSITORY=hotbudget/hotbudget",
				"GITHUB_RUN_ID=1",
			)
			for k, v := range job.Env {
				env = append(env, k+"="+eval("job "+id+": env "+k, v, matrix))
			}
			for _, s := range job.Steps {
				// The artifacts' steps' inputs (setup-go's are not used here).
				with := map[string]string{}
				if strings.Contains(s.Uses, "-artifact@") {
					for k, v := range s.With {
						with[k] = eval("step "+s.Name+": with "+k, v, matrix)
					}
				}
				runs, err := condition(s.If, event)
				if err != nil {
					t.Fatal(err)
				}
				if ok, _ := condition(s.If, "push"); ok && !runs {
					pushSteps = append(pushSteps, struct {
						env []string
						s   step
					}{env, s})
				}
				if !runs {
					continue
				}
				switch {
				case strings.HasPrefix(s.Uses, "actions/upload-artifact@"):
					// What it uploads must exist once the steps before it ran.
					if _, err := os.Stat(with["path"]); err != nil && with["if-no-files-found"] != "ignore" {
						t.Fatalf("step %q uploads %s, which is not there: %v", s.Name, with["path"], err)
					}
					uploads[with["name"]] = with["path"]
				case strings.HasPrefix(s.Uses, "actions/download-artifact@"):
					// Each artifact matching pattern under path/NAME.
					n := 0
					for name, src := range uploads {
						if ok, _ := path.Match(with["pattern"], name); ok {
							n++
							if err := os.CopyFS(filepath.Join(with["path"], name), os.DirFS(src)); err != nil {
								t.Fatal(err)
							}
						}
					}
					if n == 0 {
						t.Fatalf("step %q: no artifact matches %q", s.Name, with["pattern"])
					}
				}
				if s.Run == "" {
					continue // actions/checkout and setup-go: this checkout and this Go
				}
				if expr.MatchString(s.Run) {
					t.Fatalf("step %q: put ${{ }} expressions in env, not in the script", s.Name)
				}
				cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s.Run)
				cmd.Dir = root
				cmd.Env = env
				out, err := cmd.CombinedOutput()
				var exit *exec.ExitError
				if err != nil && errors.As(err, &exit) && exit.ExitCode() == 1 && (strings.Contains(s.Run, " record ") || strings.Contains(s.Run, " merge ")) {
					t.Logf("step %q (job %s): the A/A gate failed, as it may by design:\n%s", s.Name, id, out)
					return true
				}
				if err != nil {
					t.Fatalf("step %q (job %s %v) failed: %v\n%s", s.Name, id, matrix, err, out)
				}
				t.Logf("step %q (job %s %v):\n%s", s.Name, id, matrix, out)
			}
		}
		return false
	}
	// Jobs in the order of their needs, each after what it needs.
	var order []string
	for _, id := range slices.Sorted(maps.Keys(wf.Jobs)) {
		if need := wf.Jobs[id].Needs; need != "" && !slices.Contains(order, need) {
			order = append(order, need)
		}
		if !slices.Contains(order, id) {
			order = append(order, id)
		}
	}
	for _, id := range order {
		if ok, _ := condition(wf.Jobs[id].If, "pull_request"); !ok {
			continue
		}
		if !runJob(id, "pull_request") {
			continue
		}
		// The gate said "regressed" on identical code. A statistical gate
		// does that at its false-alarm rate (about 5% here: the
		// benchmark's wall time with 5 runs a side, and the functions):
		// once is chance, twice in a row (≤ 0.25%) a broken gate. Record
		// anew, what the job needs included, into fresh directories.
		old, _ := filepath.Glob(filepath.Join(runner, "perf*"))
		for _, d := range append(old, filepath.Join(runner, "shards")) {
			if err := os.RemoveAll(d); err != nil {
				t.Fatal(err)
			}
		}
		if need := wf.Jobs[id].Needs; need != "" && runJob(need, "pull_request") {
			t.Fatalf("job %s: a shard's record failed the gate, which shards never judge", need)
		}
		if runJob(id, "pull_request") {
			t.Fatalf("job %s: the A/A gate failed twice in a row", id)
		}
	}
	b, err := os.ReadFile(summary)
	if err != nil || len(b) == 0 {
		t.Fatalf("the gate wrote no job summary to $GITHUB_STEP_SUMMARY (%v)", err)
	}
	// The HTML reports are uploaded, and the summary says where to find one.
	reports := 0
	for name, path := range uploads {
		if !strings.HasSuffix(path, ".html") {
			continue
		}
		reports++
		page, err := os.ReadFile(path)
		if err != nil || !strings.HasPrefix(string(page), "<!DOCTYPE html>") {
			t.Errorf("artifact %s, %s, is not an HTML report (%v)", name, path, err)
		}
	}
	if reports < 1 {
		t.Errorf("the workflow uploads %d HTML reports, want perf-merge's: %v", reports, uploads)
	}
	// The perf job counts (record's default where valgrind runs) and
	// uploads its counts.
	if counts, ok := uploads["perf-counts"]; !ok {
		t.Errorf("the perf job uploads no counts: %v", uploads)
	} else if _, err := exec.LookPath("valgrind"); err == nil {
		n := 0
		filepath.WalkDir(filepath.Join(counts, "head"), func(p string, _ os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(p, ".instructions-diff.pb.gz") {
				n++
			}
			return nil
		})
		if n == 0 {
			t.Errorf("the perf job's record did not count instructions under %s", counts)
		}
	}
	if !strings.Contains(string(b), "**perf-report** artifact of this run (https://github.com/hotbudget/hotbudget/actions/runs/1#artifacts)") {
		t.Errorf("the job summary does not say where the HTML report is:\n%s", b)
	}

	// A push to main: the history steps, in a clone at HEAD whose origin
	// is a bare repository.
	if len(pushSteps) == 0 {
		t.Fatal("no step runs on a push to main: the history is never appended")
	}
	git := func(dir string, args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	head := git(root, "rev-parse", "HEAD")
	origin, clone := filepath.Join(runner, "origin.git"), filepath.Join(runner, "clone")
	git(runner, "init", "-q", "--bare", origin)
	git(runner, "clone", "-q", "--shared", "--no-checkout", root, clone)
	git(clone, "update-ref", "--no-deref", "HEAD", head)
	git(clone, "remote", "set-url", "origin", origin)
	for _, p := range pushSteps {
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", p.s.Run)
		cmd.Dir = clone
		cmd.Env = append(p.env, "GITHUB_EVENT_NAME=push")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("step %q on a push: %v\n%s", p.s.Name, err, out)
		}
		t.Logf("step %q on a push:\n%s", p.s.Name, out)
	}
	note := git(origin, "notes", "--ref=hotbudget", "show", head)
	if !strings.Contains(note, `"schema":"hotbudget.history/v1"`) || !strings.Contains(note, `"commit":"`+head+`"`) ||
		!strings.Contains(note, "examples/capture BenchmarkParse") {
		t.Errorf("origin's note of HEAD is not its record of BenchmarkParse:\n%s", note)
	}
}
