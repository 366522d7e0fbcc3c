package gate

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hotbudget/hotbudget/internal/binsym"
	"github.com/hotbudget/hotbudget/internal/history"
	"github.com/hotbudget/hotbudget/internal/textfmt"

	"golang.org/x/perf/benchfmt"
)

// How record runs: the two revisions checked out and built, their test
// binaries run, benchmark output parsed.

// recorder builds, calibrates and runs the benchmarks of two revisions.
type recorder struct {
	env   Env
	o     Config
	tmp   string
	start time.Time
	mu    sync.Mutex // progress is written from the two sides' builds at once
	prof  recProfiler
	// cost is what profiling adds to a run (profilerCost).
	cost runCost
	// estimated is how long the runs were estimated to take.
	estimated time.Duration
	// bins are the test binaries' symbols, by path (--instructions).
	bins map[string]*binsym.Binary
	// notCounted says which benchmarks a counted record left out to fit
	// --budget (exactPlan): "" when none.
	notCounted string
	// inlined is, by test binary path, each inlined function's compiled
	// functions in the dumps counted (--instructions): which function's
	// code its counted copies are in (dumpSymbolizer).
	inlined map[string]map[string]map[string]bool
	// exactMu guards bins, inlined and the sides' bench and cpu while
	// benchmarks are counted at once.
	exactMu sync.Mutex
	// shard is what a shard (--shard) writes for merge; nil otherwise.
	shard *shardLog
	// hist is the base's record when --base-from-history takes its
	// counts from the history: the base is neither checked out nor run.
	hist *history.Record
}

// recSide is one revision being recorded.
type recSide struct {
	name   string // "base" or "head"
	rev    revision
	root   string // checkout: a worktree, or the repository for "."
	dir    string // root joined with the directory record runs from
	out    string // --out/name
	tmp    string // binaries and raw profiles
	build  string // "go1.26.8 linux/amd64"
	race   bool
	bins   map[string]*testBinary // by import path
	bench  bytes.Buffer           // the benchmark output of every run
	leaves map[string]bool        // benchmark keys (pkg + name) found here
	cpu    string                 // the CPU go test named (--instructions: under callgrind)
}

type testBinary struct {
	pkg, dir, path string
}

// leaf is one benchmark that runs on its own: a top-level benchmark, or
// one sub-benchmark, named as go test prints it without the GOMAXPROCS
// suffix.
type leaf struct {
	pkg, name string
	iters     int64   // calibrated iterations
	nsOp      float64 // wall-clock time per operation when calibrated
	// bytesOp and allocsOp are what an operation allocated when
	// calibrated (-test.benchmem).
	bytesOp, allocsOp float64
	// overhead is the wall-clock time of one run beyond its timed
	// iterations: starting the test binary, the benchmark's setup, its
	// first one-iteration round, writing the profile.
	overhead time.Duration
	// reps is how many times each counting process repeats the
	// benchmark (go test -count), chosen by exactPlan; 0: exactReps.
	reps int
}

func (l leaf) key() string { return l.pkg + " " + l.name }

// pattern is the -test.bench pattern that selects l alone.
func (l leaf) pattern() string {
	parts := strings.Split(l.name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

func (r *recorder) progress(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.env.Stderr, "hotbudget record: "+format+"\n", args...)
}

// git runs git in dir and returns its trimmed stdout.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	stopGroupOnCancel(cmd)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New(msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}

func (r *recorder) run(ctx context.Context, baseRev, headRev string) (res *Measurement, err error) {
	r.start = time.Now()
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errors.New("git is not installed: hotbudget record checks out the two revisions with git worktree")
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	top, err := git(ctx, cwd, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s is not inside a git repository: run hotbudget record in the repository whose revisions it compares (git: %v)", cwd, err)
	}
	realCwd, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return nil, err
	}
	realTop, err := filepath.EvalSymlinks(top)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(realTop, realCwd)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("cannot place %s inside the repository %s", cwd, top)
	}
	sides := []*recSide{{name: "base"}, {name: "head"}}
	for i, rev := range []string{baseRev, headRev} {
		s := sides[i]
		s.rev = revision{Name: rev}
		if rev == "." {
			continue
		}
		commit, err := git(ctx, top, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
		if err != nil || commit == "" {
			return nil, fmt.Errorf("%s revision %q is unknown to the repository %s: give a branch, tag or commit it has (a shallow clone must fetch it first: actions/checkout with fetch-depth: 0)", s.name, rev, top)
		}
		s.rev.Commit = commit
	}
	if r.o.BaseFromHistory {
		if r.hist, err = r.historyBase(ctx, top, sides[0]); err != nil {
			return nil, err
		}
	}
	// The sides checked out, built and run: the head alone when the
	// base's counts come from the history.
	active := sides
	if r.hist != nil {
		active = sides[1:]
	}

	out := r.o.Out
	if out == "" {
		if out, err = os.MkdirTemp("", "hotbudget-record-"); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil { // nobody is told where it is
				os.RemoveAll(out)
			}
		}()
	}
	if out, err = filepath.Abs(out); err != nil {
		return nil, err
	}
	for _, s := range sides {
		s.out = filepath.Join(out, s.name)
		if entries, err := os.ReadDir(s.out); err == nil && len(entries) > 0 {
			return nil, fmt.Errorf("%s already holds files: remove it or choose another --out, so that old runs do not mix with new ones", s.out)
		}
		if err := os.MkdirAll(s.out, 0o755); err != nil {
			return nil, err
		}
	}

	if r.tmp, err = os.MkdirTemp("", "hotbudget-record-work-"); err != nil {
		return nil, err
	}
	defer func() {
		if r.o.Keep {
			r.progress("kept the worktrees and test binaries in %s (remove them with: git worktree prune after deleting it)", r.tmp)
			return
		}
		r.removeWorktrees(top, sides)
	}()

	how := fmt.Sprintf("%s; %d runs a side", r.o.Why, r.o.Runs)
	if r.o.Instructions {
		how = r.o.Why
	}
	r.progress("base %s, head %s; packages %s; %s", sides[0].rev, sides[1].rev, strings.Join(r.o.Packages, " "), how)
	for _, s := range sides {
		s.tmp = filepath.Join(r.tmp, s.name)
		if err := os.MkdirAll(s.tmp, 0o755); err != nil {
			return nil, err
		}
		if !slices.Contains(active, s) {
			continue
		}
		s.root = top
		if s.rev.Commit != "" {
			s.root = filepath.Join(r.tmp, s.name+"-src")
			if _, err := git(ctx, top, "worktree", "add", "--detach", "--quiet", s.root, s.rev.Commit); err != nil {
				return nil, fmt.Errorf("checking out %s %s: %v", s.name, s.rev, err)
			}
		}
		s.dir = filepath.Join(s.root, rel)
	}
	// The two sides build at once: most of a build is waiting on the
	// compiler of one package, and the machine has other cores.
	errs := make(chan error, len(active))
	for _, s := range active {
		go func() { errs <- r.build(ctx, s) }()
	}
	var buildErr error
	for range active {
		if err := <-errs; err != nil && buildErr == nil {
			buildErr = err
		}
	}
	if buildErr != nil {
		return nil, buildErr
	}
	var leaves []leaf
	if r.hist != nil {
		if err := checkHistoryBuild(r.hist, sides[1]); err != nil {
			return nil, err
		}
		if r.o.Instructions {
			leaves, err = r.calibrateFromHistory(ctx, sides[0], sides[1], r.hist)
		} else {
			leaves, err = r.calibrateTimeFromHistory(ctx, sides[0], sides[1], r.hist)
		}
	} else {
		leaves, err = r.calibrate(ctx, sides[0], sides[1])
	}
	if err != nil {
		return nil, err
	}
	res = &Measurement{out: out, baseRev: sides[0].rev, headRev: sides[1].rev, baseHistory: r.hist}
	// The gate judges the module's own functions (go list -m: the main
	// module, or a workspace's modules).
	if mods, err := goOut(ctx, sides[1].dir, "list", "-m"); err == nil {
		res.modules = strings.Fields(mods)
		shown := "the runtime's and the standard library's"
		if r.o.Instructions {
			shown = "the runtime's, the standard library's and the benchmarks' own (in _test.go files)"
		}
		r.progress("gating the functions of %s; %s are shown, not gated (--gate . gates every function)", strings.Join(res.modules, " "), shown)
	} else {
		r.progress("warning: go list -m: %v; every function is gated", err)
	}
	if len(leaves) == 0 {
		return res, nil // a shard with no benchmark (calibrate fails when there are none at all)
	}
	if r.o.Instructions {
		if r.hist != nil {
			if err := checkHistoryGate(r.hist, r.o.Gate, res.modules); err != nil {
				return nil, err
			}
		}
		return res, r.runExact(ctx, sides, leaves, res)
	}
	if err := r.runAll(ctx, sides, leaves, res); err != nil {
		return nil, err
	}
	if r.hist != nil && !r.o.NoAllocs {
		// The allocation runs need the base's allocation profiles; the
		// history keeps its B/op and allocs/op, which the benchmark
		// results judge exactly.
		r.progress("the functions' allocations are not judged: the base's runs from the history keep B/op and allocs/op (judged with the benchmark results), not each function's allocations; drop --base-from-history to judge them")
	}
	if !r.o.NoAllocs && r.hist == nil {
		gate := r.o.Gate
		if gate == nil && len(res.modules) > 0 {
			gate = ModulePattern(res.modules)
		}
		if res.allocs, err = r.recordAllocs(ctx, sides, leaves, gate); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// removeWorktrees removes the worktrees of sides, registered or half made
// (a signal may stop git worktree add), and the temporary directory, then
// prunes what git still records of them. --force twice removes a worktree
// git still holds locked while it is being added.
func (r *recorder) removeWorktrees(top string, sides []*recSide) {
	ctx := context.Background() // the run's context may be cancelled
	var roots []string
	for _, s := range sides {
		if s.rev.Commit != "" && s.root != "" {
			roots = append(roots, s.root)
			git(ctx, top, "worktree", "remove", "--force", "--force", s.root)
		}
	}
	os.RemoveAll(r.tmp)
	git(ctx, top, "worktree", "prune")
	list, err := git(ctx, top, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		r.progress("warning: git worktree list: %v", err)
		return
	}
	for _, line := range strings.Split(list, "\x00") {
		if path, ok := strings.CutPrefix(line, "worktree "); ok && slices.Contains(roots, path) {
			r.progress("warning: git still registers the worktree %s; remove it with: git worktree remove --force --force %s", path, path)
		}
	}
}

// goOut runs the go command in dir and returns its trimmed stdout.
func goOut(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// goEnv is the environment of the go commands record runs: their work
// directories (GOTMPDIR) go under record's own temporary directory, which
// record removes when it stops, so that a go command stopped by a signal
// before it could remove its own (SIGTERM as it starts) leaves nothing.
func (r *recorder) goEnv() ([]string, error) {
	dir := filepath.Join(r.tmp, "gotmp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return append(os.Environ(), "GOTMPDIR="+dir), nil
}

// build lists the packages of one side and builds the test binary of each
// package that has tests.
func (r *recorder) build(ctx context.Context, s *recSide) error {
	t0 := time.Now()
	env, err := r.goEnv()
	if err != nil {
		return err
	}
	args := append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{len .TestGoFiles}}\t{{len .XTestGoFiles}}"}, r.o.Packages...)
	cmd := exec.CommandContext(ctx, "go", args...)
	stopGroupOnCancel(cmd)
	cmd.Env = env
	cmd.Dir = s.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go list %s at %s %s failed: %v\n%s", strings.Join(r.o.Packages, " "), s.name, s.rev, err, strings.TrimSpace(stderr.String()))
	}
	s.bins = map[string]*testBinary{}
	var pkgs []*testBinary
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 || f[2] == "0" && f[3] == "0" {
			continue // no test files: no benchmarks
		}
		pkgs = append(pkgs, &testBinary{pkg: f[0], dir: f[1]})
	}
	for i, b := range pkgs {
		b.path = filepath.Join(s.tmp, fmt.Sprintf("pkg%d.test", i))
		cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", b.path, b.pkg)
		stopGroupOnCancel(cmd)
		cmd.Env = env
		cmd.Dir = s.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building the tests of %s at %s %s failed: %v\n%s", b.pkg, s.name, s.rev, err, strings.TrimSpace(string(out)))
		}
		if _, err := os.Stat(b.path); err != nil {
			continue // go test -c writes nothing for a package without tests
		}
		s.bins[b.pkg] = b
		if s.build == "" {
			if bi, err := buildinfo.ReadFile(b.path); err == nil {
				goos, goarch := runtime.GOOS, runtime.GOARCH
				for _, kv := range bi.Settings {
					switch kv.Key {
					case "GOOS":
						goos = kv.Value
					case "GOARCH":
						goarch = kv.Value
					case "-race":
						s.race = kv.Value == "true"
					}
				}
				s.build = bi.GoVersion + " " + goos + "/" + goarch
			}
		}
	}
	r.progress("built %s at %s %s (%s)", plural(len(s.bins), "test binary", "test binaries"), s.name, s.rev, since(t0))
	return nil
}

var plural = textfmt.Plural

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }

// runBinary runs a test binary's benchmarks in its package's directory,
// as go test does, and returns their output.
func (r *recorder) runBinary(ctx context.Context, s *recSide, b *testBinary, args ...string) ([]byte, error) {
	cmd, stdout, stderr := r.benchCmd(ctx, b, args...)
	if err := cmd.Run(); err != nil {
		return nil, benchFailed(ctx, s, b, err, stdout, stderr)
	}
	return stdout.Bytes(), nil
}

// benchResult is one line of benchmark output.
type benchResult struct {
	name  string // without the GOMAXPROCS suffix
	iters int64
	nsOp  float64 // wall-clock time per operation
	// Allocations per op (-test.benchmem): bytes and objects.
	bytesOp, allocsOp float64
}

// parseBench reads the benchmark results in out.
func (r *recorder) parseBench(out []byte) []benchResult {
	var res []benchResult
	rd := benchfmt.NewReader(bytes.NewReader(out), "")
	suffix := ""
	if r.o.Procs != 1 {
		suffix = "-" + strconv.Itoa(r.o.Procs)
	}
	for rd.Scan() {
		if rec, ok := rd.Result().(*benchfmt.Result); ok {
			name := "Benchmark" + strings.TrimSuffix(string(rec.Name), suffix)
			ns, ok := rec.Value("sec/op")
			if ok {
				ns *= 1e9
			} else {
				ns, _ = rec.Value("ns/op")
			}
			b, _ := rec.Value("B/op")
			a, _ := rec.Value("allocs/op")
			res = append(res, benchResult{name, int64(rec.Iters), ns, b, a})
		}
	}
	return res
}
