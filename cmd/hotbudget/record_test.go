package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/perfevent"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// recordIn runs hotbudget record in dir.
func recordIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"record"}, args...), strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	t.Logf("hotbudget record %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// verdicts reads the function rows of record's text report: name ->
// verdict, from the full tables (--full) or the short report's lines of
// the functions regressed and near misses.
func verdicts(out string) map[string]string {
	funcs, _, _ := strings.Cut(out, "\nbenchmark results")
	v := map[string]string{}
	row := regexp.MustCompile(`(?m)^\s*\S+\s+\S+\s+\S+\s+\S+\s+(regressed|improved|unchanged|new|gone)\s+(\S+)$`)
	for _, m := range row.FindAllStringSubmatch(funcs, -1) {
		v[m[2]] = m[1]
	}
	short := regexp.MustCompile(`(?m)^      (regressed|near miss) (\S+) [-+]`)
	for _, m := range short.FindAllStringSubmatch(funcs, -1) {
		v[m[2]] = m[1]
	}
	return v
}

// TestRecord records two revision pairs of a small module in a temporary
// repository: one where checksum got 50% slower, which the gate must fail
// naming checksum and nothing else of the module, and one that changed
// only a README, which must pass. A statistical gate errs now and then by
// design (at most its false-discovery rate), so a pair that comes out
// wrong is recorded once more before the test fails.
func TestRecord(t *testing.T) {
	testutil.Slow(t, "builds and benchmarks two revisions twice")
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	start := time.Now()
	repo := testutil.RecordRepo(t)
	// 600ms a run gives checksum about 45 samples a run at pprof's 100 Hz
	// (where perf events are refused; 4,500 at their 10 kHz); with 300ms
	// its 20 samples' noise hides a 50% change now and then.
	args := []string{"--instrument", "time", "--runs", "5", "--benchtime", "600ms"}

	var slow result
	for try := 1; try <= 2; try++ {
		out := filepath.Join(t.TempDir(), "perf")
		slow = recordIn(t, repo, append(args, "--out", out, "HEAD~2", "HEAD")...)
		v := verdicts(slow.stdout)
		if slow.code == exitFail && v["example.com/rec.checksum"] == "regressed" && v["example.com/rec.scan"] != "regressed" && v["example.com/rec.render"] != "regressed" {
			checkRecordFiles(t, out)
			break
		}
		if try == 2 || slow.code == exitUsage {
			t.Fatalf("checksum 50%% slower: exit %d, verdicts %v, want exit 1 and checksum alone regressed\n%s\n%s", slow.code, v, slow.stdout, slow.stderr)
		}
		t.Logf("checksum 50%% slower, try %d: exit %d, verdicts %v; recording again\n%s", try, slow.code, v, slow.stdout)
	}
	if !strings.Contains(slow.stdout, "regressed: example.com/rec.checksum") {
		t.Errorf("the summary does not name checksum:\n%s", slow.stdout)
	}

	for try := 1; try <= 2; try++ {
		same := recordIn(t, repo, append(args, "--out", filepath.Join(t.TempDir(), "perf"), "HEAD~2", "HEAD~1")...)
		if same.code == exitOK {
			break
		}
		if try == 2 || same.code == exitUsage {
			t.Fatalf("no code change: exit %d, want 0\n%s\n%s", same.code, same.stdout, same.stderr)
		}
		t.Logf("no code change, try %d: exit %d; recording again\n%s", try, same.code, same.stdout)
	}

	// The worktrees are gone.
	cmd := exec.Command("git", "worktree", "list")
	cmd.Dir = repo
	if out, err := cmd.Output(); err != nil || strings.Count(string(out), "\n") != 1 {
		t.Errorf("git worktree list after record: %v\n%s", err, out)
	}
	t.Logf("TestRecord took %s", time.Since(start).Round(time.Second))
}

// checkRecordFiles checks what record wrote: bench.txt with a result per
// run, a merged profile per run and a profile per benchmark and run, each
// recording the iterations it ran, the same on both sides.
func checkRecordFiles(t *testing.T, out string) {
	t.Helper()
	work := map[string]float64{}
	// Perf events at 10 kHz where allowed, else runtime/pprof's 100 Hz.
	wantHz := 10000
	if lvl, err := perfevent.Paranoid(); err != nil || lvl > 2 {
		wantHz = 100
	}
	for _, side := range []string{"base", "head"} {
		bench, err := os.ReadFile(filepath.Join(out, side, "bench.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(bench), "BenchmarkProcess"); n != 5 {
			t.Errorf("%s/bench.txt has %d results, want 5:\n%s", side, n, bench)
		}
		if !strings.Contains(string(bench), "pkg: example.com/rec\n") {
			t.Errorf("%s/bench.txt lacks the package:\n%s", side, bench)
		}
		for run := 1; run <= 5; run++ {
			for _, path := range []string{
				filepath.Join(out, side, "cpu-"+string(rune('0'+run))+".pb.gz"),
				filepath.Join(out, side, "example.com", "rec", "BenchmarkProcess."+string(rune('0'+run))+".pb.gz"),
			} {
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				p, err := profile.Parse(f)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				rec, ok, err := meta.Get(p)
				if err != nil || !ok || rec.WorkUnit != "op" || len(rec.Runs) != 1 || rec.Runs[0].Work < 1 || !strings.HasPrefix(rec.Build, "go1.") || rec.RateHz != wantHz {
					t.Errorf("%s: record %+v (ok %v, err %v), want one run of op with work, the build, %d Hz", path, rec, ok, err, wantHz)
					continue
				}
				if w, seen := work[filepath.Base(path)]; seen && w != rec.Runs[0].Work {
					t.Errorf("%s: %v ops, the other side %v: both sides must do the same work", path, rec.Runs[0].Work, w)
				}
				work[filepath.Base(path)] = rec.Runs[0].Work
			}
		}
	}
}

// TestRecordErrors: clear errors, exit 2, for what a user gets wrong.
func TestRecordErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test binaries; skipped with -short")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	notRepo := t.TempDir()
	r := recordIn(t, notRepo, "HEAD~1", "HEAD")
	if r.code != exitUsage || !strings.Contains(r.stderr, "is not inside a git repository") {
		t.Errorf("outside a repository: exit %d\n%s", r.code, r.stderr)
	}
	repo := testutil.RecordRepo(t)
	r = recordIn(t, repo, "no-such-branch", "HEAD")
	if r.code != exitUsage || !strings.Contains(r.stderr, `base revision "no-such-branch" is unknown`) || !strings.Contains(r.stderr, "fetch-depth: 0") {
		t.Errorf("unknown revision: exit %d\n%s", r.code, r.stderr)
	}
	r = recordIn(t, repo, "--bench", "NoSuchBenchmark", "--out", filepath.Join(t.TempDir(), "o"), "HEAD", "HEAD")
	if r.code != exitUsage || !strings.Contains(r.stderr, `no benchmark matches --bench "NoSuchBenchmark"`) ||
		!strings.Contains(r.stderr, "the pattern matched no benchmark") || strings.Contains(r.stderr, "name a package that has benchmarks") {
		t.Errorf("no benchmark: exit %d\n%s", r.code, r.stderr)
	}
	// A build failure shows the compiler's message. "." is the working
	// tree, uncommitted changes included.
	if err := os.WriteFile(filepath.Join(repo, "broken.go"), []byte("package rec\n\nfunc broken() int { return undefinedThing }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = recordIn(t, repo, "--out", filepath.Join(t.TempDir(), "o"), "HEAD", ".")
	if r.code != exitUsage || !strings.Contains(r.stderr, "at head . (working tree) failed") || !strings.Contains(r.stderr, "undefined: undefinedThing") {
		t.Errorf("build failure: exit %d\n%s", r.code, r.stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"HEAD"}, "want BASE and HEAD revisions"},
		{[]string{"--runs", "0", "HEAD", "HEAD"}, "--runs must be at least 1"},
		{[]string{"--benchtime", "fast", "HEAD", "HEAD"}, `--benchtime "fast"`},
		{[]string{"--bench", "(", "HEAD", "HEAD"}, "--bench: error parsing regexp"},
	} {
		r := recordIn(t, repo, c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, want 2 and %q\n%s", c.args, r.code, c.want, r.stderr)
		}
	}
	cmd := exec.Command("git", "worktree", "list")
	cmd.Dir = repo
	if out, err := cmd.Output(); err != nil || strings.Count(string(out), "\n") != 1 {
		t.Errorf("git worktree list after failed records: %v\n%s", err, out)
	}
}

// lockedBuffer is a bytes.Buffer a child process writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// worktrees is the paths git worktree list names in repo, the main one first.
func worktrees(t *testing.T, repo string) []string {
	t.Helper()
	paths, err := worktreeList(repo)
	if err != nil {
		t.Fatalf("git worktree list: %v", err)
	}
	return paths
}

// worktreeList is the paths of repo's worktrees, as git lists them. While
// another git adds a worktree, git worktree list can fail (exit 128, seen
// on a loaded machine): a caller that polls tries again.
func worktreeList(repo string) ([]string, error) {
	cmd := exec.Command("git", "worktree", "list", "--porcelain", "-z")
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range strings.Split(string(out), "\x00") {
		if p, ok := strings.CutPrefix(f, "worktree "); ok {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// processesUnder is the command lines of the processes whose command line
// names a path under dir (Linux: read from /proc).
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(dir)) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// TestRecordSignals stops hotbudget record, a child process, with the
// signals CI cancellation, timeout(1) and a closed terminal send: SIGTERM
// while it builds (once its worktrees exist) and SIGHUP while the
// benchmarks run. Either way it must exit 128+signal, leave no worktree
// registered, its temporary directory and default output directory gone
// (TMPDIR empty: the go command, stopped as by Ctrl-C, removes its work
// directory too), and no process of its own running.
func TestRecordSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and benchmarks two revisions; skipped with -short")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, c := range []struct {
		sig  syscall.Signal
		when string
		// ready reports whether record has got as far as when says.
		ready func(repo, stderr string) bool
	}{
		{syscall.SIGTERM, "building, once the worktrees exist", func(repo, _ string) bool {
			// Polled while record adds them: a failed listing is "not yet".
			wt, err := worktreeList(repo)
			return err == nil && len(wt) == 3
		}},
		{syscall.SIGHUP, "running the benchmarks", func(_, stderr string) bool { return strings.Contains(stderr, "run 1 of 50") }},
	} {
		t.Run(c.sig.String(), func(t *testing.T) {
			repo := testutil.RecordRepo(t)
			tmp := t.TempDir()
			cmd := exec.Command(os.Args[0], "record", "--runs", "50", "--benchtime", "100ms", "HEAD~2", "HEAD")
			cmd.Dir = repo
			cmd.Env = append(os.Environ(), mainEnv+"=1", "TMPDIR="+tmp)
			var stderr lockedBuffer
			cmd.Stdout, cmd.Stderr = &stderr, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			deadline := time.After(3 * time.Minute)
		wait:
			for !c.ready(repo, stderr.String()) {
				select {
				case err := <-done:
					t.Fatalf("record ended (%v) before %s:\n%s", err, c.when, stderr.String())
				case <-deadline:
					cmd.Process.Kill()
					t.Fatalf("record did not get to %s in 3 minutes:\n%s", c.when, stderr.String())
				case <-time.After(10 * time.Millisecond):
					continue wait
				}
			}
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatalf("record still runs a minute after %v:\n%s", c.sig, stderr.String())
			}
			out := stderr.String()
			t.Logf("%v while %s:\n%s", c.sig, c.when, out)
			if code := cmd.ProcessState.ExitCode(); code != 128+int(c.sig) {
				t.Errorf("exit %d (%v), want %d", code, err, 128+int(c.sig))
			}
			if want := "stopped by " + c.sig.String(); !strings.Contains(out, want) {
				t.Errorf("stderr does not say %q", want)
			}
			if wt := worktrees(t, repo); len(wt) != 1 {
				t.Errorf("worktrees still registered: %q", wt)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				var names []string
				for _, e := range left {
					names = append(names, e.Name())
				}
				t.Errorf("left in TMPDIR: %q", names)
			}
			if ps := processesUnder(t, tmp); len(ps) > 0 {
				t.Errorf("processes still running from TMPDIR:\n%s", strings.Join(ps, "\n"))
			}
		})
	}
}

// TestRecordFlagPatterns: a package pattern after "--" that starts with '-'
// would reach go list as one of its flags (-toolexec names a program to
// run, -modfile and -overlay other inputs): it is refused, exit 2, before
// git or go runs.
func TestRecordFlagPatterns(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := testutil.RecordRepo(t)
	marker := filepath.Join(t.TempDir(), "ran")
	script := filepath.Join(t.TempDir(), "x.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"HEAD~1", "HEAD", "--", "-toolexec=" + script, "./..."},
		{"HEAD~1", "HEAD", "./...", "--", "-modfile=x.mod"},
		{"--runs", "1", "HEAD~1", "HEAD", "--", "./...", "-x"},
	} {
		r := recordIn(t, repo, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "starts with '-'") || strings.Contains(r.stderr, "hotbudget record: base ") {
			t.Errorf("record %q: exit %d, want 2 refusing the pattern before starting\n%s", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the -toolexec program ran")
	}
	if wt := worktrees(t, repo); len(wt) != 1 {
		t.Errorf("worktrees registered: %q", wt)
	}
}
