package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/perfevent"
	"github.com/hotbudget/hotbudget/internal/perfexec"
	"github.com/hotbudget/hotbudget/internal/samplercheck"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// recordEnv records the revisions of args in dir through the engine in
// this process (so that the tests' hooks, runPerf, checkHost and
// checkAgain, apply), with env as its environment, and judges as record
// does: exit 2 for an error.
func recordEnv(t *testing.T, dir string, env map[string]string, args ...string) result {
	t.Helper()
	t.Chdir(dir)
	cfg, _ := configOf(t, args)
	base, head := args[len(args)-2], args[len(args)-1]
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string { return env[k] }
	code := func() int {
		if _, err := samplercheck.Sampler(getenv); err != nil { // as the command checks it first
			fmt.Fprintf(&stderr, "hotbudget record: %v\n", err)
			return exitUsage
		}
		m, err := Record(context.Background(), cfg, Env{Stderr: &stderr, Getenv: getenv}, base, head)
		var v *Verdict
		if err == nil {
			v, err = Judge(m, Judgement{GateModules: true})
		}
		if err == nil {
			err = v.Write(&stdout, "text", false)
		}
		if err != nil {
			fmt.Fprintf(&stderr, "hotbudget record: %v\n", err)
			return exitUsage
		}
		return v.Exit
	}()
	t.Logf("%v hotbudget record %s: exit %d\n%s", env, strings.Join(args, " "), code, stderr.String())
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// readRun reads the profile of run 1 of BenchmarkProcess on one side.
func readRun(t *testing.T, out, side string) (*profile.Profile, meta.Record) {
	t.Helper()
	f, err := os.Open(filepath.Join(out, side, "example.com", "rec", "BenchmarkProcess.1.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := meta.Get(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, rec
}

func samplesOf(p *profile.Profile, fn string) (n, all int64) {
	for _, s := range p.Sample {
		all += s.Value[0]
		for _, l := range s.Location {
			for _, ln := range l.Line {
				if ln.Function.Name == fn {
					n += s.Value[0]
					goto next
				}
			}
		}
	next:
	}
	return n, all
}

// TestRecordSampler: record profiles with perf events where they are
// allowed, at 10 kHz; HOTBUDGET_SAMPLER=pprof forces go test -cpuprofile;
// where perf events are refused it falls back and says so once, with the
// rate it got and how to allow perf events; a bad value is a usage error.
func TestRecordSampler(t *testing.T) {
	testutil.Slow(t, "records two revisions four times")
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := testutil.RecordRepo(t)
	args := func(out string) []string {
		// The allocation runs say nothing of the profiler: left out.
		return []string{"--time", "--runs", "2", "--benchtime", "300ms", "--no-allocs", "--out", out, "HEAD~2", "HEAD"}
	}
	notes := func(r result, what string) {
		t.Helper()
		if n := strings.Count(r.stderr, "profiling each run with"); n != 1 {
			t.Errorf("%s: %d notes on the profiler, want 1:\n%s", what, n, r.stderr)
		}
	}

	t.Run("pprof", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "perf")
		r := recordEnv(t, repo, map[string]string{samplerEnv: "pprof"}, args(out)...)
		if r.code == exitUsage {
			t.Fatalf("exit %d", r.code)
		}
		notes(r, "pprof")
		if !strings.Contains(r.stderr, "go test -cpuprofile (runtime/pprof asks 100 Hz;") || !strings.Contains(r.stderr, "HOTBUDGET_SAMPLER=pprof") {
			t.Errorf("the note does not say runtime/pprof was forced:\n%s", r.stderr)
		}
		for _, side := range []string{"base", "head"} {
			if p, rec := readRun(t, out, side); rec.RateHz != 100 || p.Period != 10_000_000 {
				t.Errorf("%s: %d Hz, period %d, want runtime/pprof's 100 Hz", side, rec.RateHz, p.Period)
			}
		}
	})

	t.Run("refused", func(t *testing.T) {
		t.Cleanup(func() { runPerf = perfexec.Run })
		calls := 0
		runPerf = func(cmd *exec.Cmd, o perfexec.Options) (*perfexec.Result, error) {
			calls++
			return nil, fmt.Errorf("perfevent: perf events are refused (kernel.perf_event_paranoid is 3): %w", perfexec.ErrUnavailable)
		}
		out := filepath.Join(t.TempDir(), "perf")
		r := recordEnv(t, repo, nil, args(out)...)
		if r.code == exitUsage {
			t.Fatalf("exit %d", r.code)
		}
		notes(r, "refused")
		if !strings.Contains(r.stderr, "perf events are refused here (perfevent: perf events are refused (kernel.perf_event_paranoid is 3)") ||
			!strings.Contains(r.stderr, "sysctl kernel.perf_event_paranoid=2 allows them") {
			t.Errorf("the fallback is not explained:\n%s", r.stderr)
		}
		if calls != 1 {
			t.Errorf("perf events were tried %d times, want once", calls)
		}
		if _, rec := readRun(t, out, "head"); rec.RateHz != 100 {
			t.Errorf("%d Hz after the fallback, want 100", rec.RateHz)
		}
	})

	t.Run("misattributed", func(t *testing.T) {
		t.Cleanup(func() { runPerf, checkHost = perfexec.Run, samplercheck.Recent })
		calls, checks := 0, 0
		runPerf = func(cmd *exec.Cmd, o perfexec.Options) (*perfexec.Result, error) {
			calls++
			return perfexec.Run(cmd, o)
		}
		checkHost = func(period time.Duration) (*samplercheck.Result, error) {
			checks++
			r := samplercheck.Judge(map[string]time.Duration{"alu": 50, "callsleaf": 50}, map[string]int64{"alu": 700, "callsleaf": 1300})
			r.Period = period
			return r, nil
		}
		out := filepath.Join(t.TempDir(), "perf")
		r := recordEnv(t, repo, nil, args(out)...)
		if r.code == exitUsage {
			t.Fatalf("exit %d", r.code)
		}
		notes(r, "misattributed")
		if !strings.Contains(r.stderr, "go test -cpuprofile") || !strings.Contains(r.stderr, "perf events misattribute time on this machine: cpu-clock samples every 100µs disagree with") ||
			!strings.Contains(r.stderr, "HOTBUDGET_SAMPLER=perf uses them anyway") {
			t.Errorf("the fallback is not explained:\n%s", r.stderr)
		}
		if calls != 0 || checks != 1 {
			t.Errorf("perf events were used %d times after %d checks, want none after one", calls, checks)
		}
		if _, rec := readRun(t, out, "head"); rec.RateHz != 100 {
			t.Errorf("%d Hz after the fallback, want 100", rec.RateHz)
		}
	})

	t.Run("wrong during", func(t *testing.T) {
		if lvl, err := perfevent.Paranoid(); err != nil || lvl > 2 {
			t.Skipf("perf events are not allowed here (kernel.perf_event_paranoid %d, %v)", lvl, err)
		}
		t.Cleanup(func() { checkHost, checkAgain = samplercheck.Recent, samplercheck.Again })
		checkHost = func(period time.Duration) (*samplercheck.Result, error) { return checkFinding(period, 1010), nil }
		checkAgain = func(period time.Duration, n int) (*samplercheck.Result, *samplercheck.Result, error) {
			return checkFinding(period, 1300), checkFinding(period, 1300), nil
		}
		r := recordEnv(t, repo, nil, args(filepath.Join(t.TempDir(), "o"))...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "perf events went wrong during the record: after ") || !strings.Contains(r.stderr, "its runs are not judged") {
			t.Errorf("exit %d, want 2 refusing the runs\n%s", r.code, r.stderr)
		}
	})

	t.Run("bad", func(t *testing.T) {
		r := recordEnv(t, repo, map[string]string{samplerEnv: "fast"}, args(filepath.Join(t.TempDir(), "o"))...)
		if r.code != exitUsage || !strings.Contains(r.stderr, `HOTBUDGET_SAMPLER="fast": want "perf", "pprof" or "auto"`) {
			t.Errorf("exit %d, want 2 naming the variable\n%s", r.code, r.stderr)
		}
	})

	t.Run("perf", func(t *testing.T) {
		if lvl, err := perfevent.Paranoid(); err != nil || lvl > 2 {
			t.Skipf("perf events are not allowed here (kernel.perf_event_paranoid %d, %v)", lvl, err)
		}
		out := filepath.Join(t.TempDir(), "perf")
		r := recordEnv(t, repo, map[string]string{samplerEnv: "perf"}, args(out)...)
		if r.code == exitUsage {
			t.Fatalf("exit %d", r.code)
		}
		notes(r, "perf")
		if !strings.Contains(r.stderr, "profiling each run with perf events (cpu-clock): 10000 samples/s asked") {
			t.Errorf("the note does not say perf events ran:\n%s", r.stderr)
		}
		for _, side := range []string{"base", "head"} {
			p, rec := readRun(t, out, side)
			n, all := samplesOf(p, "example.com/rec.checksum")
			// 300ms of benchmark at 10 kHz: about 3,000 samples, where
			// runtime/pprof takes 30. checksum is about half.
			if rec.RateHz != 10000 || all < 1000 || n < all/5 {
				t.Errorf("%s: %d Hz, %d samples, %d in checksum: want 10 kHz, 1,000 samples or more, a fifth in checksum", side, rec.RateHz, all, n)
			}
			if rec.Runs[0].Work < 1 {
				t.Errorf("%s: no work recorded: %+v", side, rec)
			}
		}
	})
}

// checkFinding is a check's finding on samples that gave alu n of 2,000
// samples against half the measured time (1,000 agrees).
func checkFinding(period time.Duration, n int64) *samplercheck.Result {
	r := samplercheck.Judge(map[string]time.Duration{"alu": 50, "callsleaf": 50}, map[string]int64{"alu": n, "callsleaf": 2000 - n})
	r.Period = period
	return r
}

// TestRecordRechecks: record checks perf events before its first run and
// again after each run (a probe of recordProbe samples); a run after which
// they disagree with the thread's CPU clock makes record refuse its runs,
// naming the check's figures, how to profile instead and the exact
// instrument. With the check off, nothing is checked. The checks' findings
// are simulated.
func TestRecordRechecks(t *testing.T) {
	t.Cleanup(func() { checkHost, checkAgain = samplercheck.Recent, samplercheck.Again })
	hosts, agains := 0, 0
	checkHost = func(period time.Duration) (*samplercheck.Result, error) {
		hosts++
		return checkFinding(period, 1010), nil
	}
	alu := int64(1010)
	checkAgain = func(period time.Duration, n int) (*samplercheck.Result, *samplercheck.Result, error) {
		agains++
		if n != recordProbe || period != perfexec.DefaultPeriod {
			t.Errorf("probe of %d samples at %v, want %d at %v", n, period, recordProbe, perfexec.DefaultPeriod)
		}
		return checkFinding(period, alu), checkFinding(period, 1000), nil
	}
	var stderr bytes.Buffer
	env := map[string]string{}
	r := &recorder{env: Env{Stderr: &stderr, Getenv: func(k string) string { return env[k] }}}
	r.hostChecked()
	r.hostChecked()
	if err := r.recheck("run 1"); err != nil || hosts != 1 || agains != 1 {
		t.Fatalf("a right sampler: %v after %d checks before and %d after, want none after 1 and 1", err, hosts, agains)
	}
	alu = 1300
	err := r.recheck("BenchmarkX at head, run 2")
	if !errors.Is(err, errWrongDuring) {
		t.Fatalf("a sampler gone wrong: %v", err)
	}
	for _, w := range []string{"after BenchmarkX at head, run 2, cpu-clock samples every 100µs disagree", "alu +15.0 points", "its runs are not judged", "HOTBUDGET_SAMPLER=pprof", "--instructions"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the refusal lacks %q: %v", w, err)
		}
	}

	env[samplercheck.Env] = "off"
	r = &recorder{env: r.env}
	r.hostChecked()
	if err := r.recheck("run 1"); err != nil || hosts != 1 || agains != 2 {
		t.Errorf("the check off: %v after %d checks before and %d after, want none after 1 and 2", err, hosts, agains)
	}
}
