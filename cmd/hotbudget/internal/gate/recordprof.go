package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/binsym"
	"github.com/hotbudget/hotbudget/internal/perfexec"
	"github.com/hotbudget/hotbudget/internal/samplercheck"
)

// samplerEnv picks record's profiler, as it picks perfassert.Capture's
// (perfassert.SamplerEnv): "pprof" forces go test's -test.cpuprofile
// (runtime/pprof), "perf" Linux perf events (record fails where they are
// refused), "auto" or unset perf events where allowed, else pprof.
const samplerEnv = samplercheck.SamplerEnv

// recProfiler is what record knows of its profiler across runs.
type recProfiler struct {
	mu      sync.Mutex
	refused error // why perf events were refused, once they were
	said    bool  // the note on the profiler was written
	checked bool  // the machine's perf events were checked (hostChecked)
	check   *samplercheck.Result
	probes  int     // the probes made after perf runs (recheck)
	worst   float64 // the largest difference they found, in points
	syms    map[string]*binsym.Binary
}

// profileRun runs a test binary's benchmarks once (args select them, as
// for runBinary) under the profiler, and returns their output and CPU
// profile. what names the run in errors. The first run says which profiler
// ran and at what rate; where perf events are refused it says so and how
// to allow them.
func (r *recorder) profileRun(ctx context.Context, s *recSide, b *testBinary, what string, args ...string) ([]byte, *profile.Profile, error) {
	mode, err := samplercheck.Sampler(r.env.Getenv)
	if err != nil {
		return nil, nil, err
	}
	pr := &r.prof
	if mode == "auto" {
		r.hostChecked()
	}
	pr.mu.Lock()
	refused := pr.refused
	pr.mu.Unlock()
	if mode != "pprof" && refused == nil {
		out, p, err := r.perfRun(ctx, s, b, what, args)
		if err == nil || !errors.Is(err, perfexec.ErrUnavailable) || mode == "perf" {
			return out, p, err
		}
		pr.mu.Lock()
		pr.refused = err
		pr.mu.Unlock()
	}
	return r.pprofRun(ctx, s, b, what, mode, args)
}

// runPerf is perfexec.Run; tests replace it to refuse perf events.
var runPerf = perfexec.Run

// checkHost is samplercheck.Recent and checkAgain samplercheck.Again;
// tests replace them to make the machine's perf events misattribute.
var (
	checkHost  = samplercheck.Recent
	checkAgain = samplercheck.Again
)

// recordProbe is the size of the probe made after each run with perf
// events (record's own check): 30ms of CPU time at 100µs.
const recordProbe = 300

// misattributed is the reason perf events are not used on a machine whose
// samples failed the check.
type misattributed struct{ r *samplercheck.Result }

func (e misattributed) Error() string {
	return fmt.Sprintf("perf events misattribute time on this machine: %s; %s=perf uses them anyway, %s=off skips the check",
		e.r, samplerEnv, samplercheck.Env)
}

// hostChecked checks once, before the first perf run, that the machine's
// cpu-clock samples attribute time as the thread's CPU clock measures it
// (package samplercheck: the probes of the last two minutes, or a new
// one), and refuses perf events where they do not, so that record
// profiles with runtime/pprof there. Each perf run is checked again after
// it (recheck).
func (r *recorder) hostChecked() {
	pr := &r.prof
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.checked || pr.refused != nil || r.env.Getenv(samplercheck.Env) == "off" {
		return
	}
	pr.checked = true
	res, err := checkHost(perfexec.DefaultPeriod)
	if err != nil {
		return // refused perf events show at the first run; a failed check trusts them as before
	}
	pr.check = res
	if res.Misattributes() {
		pr.refused = misattributed{res}
	}
}

// errWrongDuring is record's refusal of runs profiled by perf events that
// went wrong while it ran.
var errWrongDuring = errors.New("perf events went wrong during the record")

// recheck is record's own check after a run with perf events that the
// check allowed: a probe now (samplercheck.Again), alone and with the
// newest. Where it finds the samples misattributed the record's runs are
// not judged: record fails (exit 2) saying so, and run again it profiles
// with runtime/pprof while the probes disagree. A record run with
// HOTBUDGET_SAMPLER=perf, or with the check off, is not checked.
func (r *recorder) recheck(what string) error {
	pr := &r.prof
	pr.mu.Lock()
	checked := pr.check != nil
	pr.mu.Unlock()
	if !checked {
		return nil
	}
	fresh, pooled, err := checkAgain(perfexec.DefaultPeriod, recordProbe)
	if err != nil {
		return nil
	}
	pr.mu.Lock()
	pr.probes++
	pr.worst = max(pr.worst, math.Abs(pooled.Err), math.Abs(fresh.Err))
	pr.mu.Unlock()
	if w, wrong := samplercheck.Wrong(fresh, pooled); wrong {
		return fmt.Errorf("%w: after %s, %s; its runs are not judged. Run record again: it profiles with runtime/pprof while the probes disagree (%s=pprof forces it; --instructions counts instructions, which no sampler biases)",
			errWrongDuring, what, w, samplerEnv)
	}
	return nil
}

// benchCmd is the command that runs a test binary's benchmarks, as go test
// runs them, in its package's directory.
func (r *recorder) benchCmd(ctx context.Context, b *testBinary, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	all := append([]string{"-test.run", "^$", "-test.cpu", strconv.Itoa(r.o.Procs), "-test.benchmem"}, args...)
	cmd := exec.CommandContext(ctx, b.path, all...)
	stopGroupOnCancel(cmd)
	cmd.Dir = b.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr
}

// benchFailed is the error of benchmarks that failed.
func benchFailed(ctx context.Context, s *recSide, b *testBinary, err error, stdout, stderr *bytes.Buffer) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	out := strings.TrimSpace(stdout.String() + stderr.String())
	if lines := strings.Split(out, "\n"); len(lines) > 40 {
		out = "...\n" + strings.Join(lines[len(lines)-40:], "\n")
	}
	return fmt.Errorf("the benchmarks of %s at %s %s failed: %v\n%s", b.pkg, s.name, s.rev, err, out)
}

// perfRun profiles with perf events opened on the test binary before it
// starts (perfexec), symbolised from the binary.
func (r *recorder) perfRun(ctx context.Context, s *recSide, b *testBinary, what string, args []string) ([]byte, *profile.Profile, error) {
	cmd, stdout, stderr := r.benchCmd(ctx, b, args...)
	res, err := runPerf(cmd, perfexec.Options{})
	if errors.Is(err, perfexec.ErrUnavailable) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, benchFailed(ctx, s, b, err, stdout, stderr)
	}
	sym, err := r.symbols(b)
	if err != nil {
		return nil, nil, fmt.Errorf("the symbols of %s: %w", what, err)
	}
	p, err := perfexec.Profile(res, sym)
	if err != nil {
		return nil, nil, fmt.Errorf("the CPU profile of %s: %w", what, err)
	}
	if res.Lost > uint64(len(res.Samples)/100) {
		r.progress("warning: %s: the kernel dropped %d of %d samples (a ring buffer was full): the profile under-counts", what, res.Lost, uint64(len(res.Samples))+res.Lost)
	}
	if err := r.recheck(what); err != nil {
		return nil, nil, err
	}
	checked := ""
	if c := r.prof.check; c != nil {
		checked = fmt.Sprintf("; on this machine they agree with the thread's CPU clock within %.1f points on a workload of known cost (%d samples), checked again after every run", math.Abs(c.Err), c.Samples)
	}
	r.sayOnce("profiling each run with perf events (cpu-clock): %.0f samples/s asked, %.0f delivered per second of user CPU time in the first run, %d lost (%s=pprof profiles with go test -cpuprofile instead)%s",
		1/res.Period.Seconds(), res.Rate(), res.Lost, samplerEnv, checked)
	return stdout.Bytes(), p, nil
}

// symbols are test binary b's symbols, read once.
func (r *recorder) symbols(b *testBinary) (*binsym.Binary, error) {
	pr := &r.prof
	pr.mu.Lock()
	sym := pr.syms[b.path]
	pr.mu.Unlock()
	if sym != nil {
		return sym, nil
	}
	sym, err := binsym.Open(b.path)
	if err != nil {
		return nil, err
	}
	pr.mu.Lock()
	if pr.syms == nil {
		pr.syms = map[string]*binsym.Binary{}
	}
	pr.syms[b.path] = sym
	pr.mu.Unlock()
	return sym, nil
}

// pprofRun profiles with go test's -test.cpuprofile, runtime/pprof's 100 Hz.
func (r *recorder) pprofRun(ctx context.Context, s *recSide, b *testBinary, what, mode string, args []string) ([]byte, *profile.Profile, error) {
	dir, err := os.MkdirTemp(s.tmp, "cpu")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	raw := filepath.Join(dir, "cpu.pprof")
	cmd, stdout, stderr := r.benchCmd(ctx, b, append(args, "-test.cpuprofile", raw)...)
	if err := cmd.Run(); err != nil {
		return nil, nil, benchFailed(ctx, s, b, err, stdout, stderr)
	}
	f, err := os.Open(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s wrote no CPU profile: %w", what, err)
	}
	p, err := profile.Parse(f)
	f.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("the CPU profile of %s: %w", what, err)
	}
	// The rate delivered: samples per second of the process's CPU time
	// (the profile covers the benchmarks, nearly all of it).
	rate := 0.0
	if st := cmd.ProcessState; st != nil {
		if cpu := st.UserTime() + st.SystemTime(); cpu > 0 {
			n := int64(0)
			for _, smp := range p.Sample {
				n += smp.Value[0]
			}
			rate = float64(n) / cpu.Seconds()
		}
	}
	pr := &r.prof
	pr.mu.Lock()
	refused := pr.refused
	pr.mu.Unlock()
	why := samplerEnv + "=pprof"
	var mis misattributed
	if mode != "pprof" && errors.As(refused, &mis) {
		why = mis.Error()
	} else if mode != "pprof" && refused != nil {
		why = fmt.Sprintf("perf events are refused here (%v); sysctl kernel.perf_event_paranoid=2 allows them and samples at %.0f Hz", refused, 1/perfexec.DefaultPeriod.Seconds())
	}
	if mode != "pprof" && refused != nil {
		why += "; at this rate time verdicts see only larger changes than with perf events (--instructions counts instructions exactly)"
	}
	r.sayOnce("profiling each run with go test -cpuprofile (runtime/pprof asks %d Hz; %.0f samples per second of CPU time delivered in the first run): %s",
		rateHz(p), rate, why)
	return stdout.Bytes(), p, nil
}

// sayOnce writes a progress line the first time it is called.
func (r *recorder) sayOnce(format string, args ...any) {
	r.prof.mu.Lock()
	said := r.prof.said
	r.prof.said = true
	r.prof.mu.Unlock()
	if !said {
		r.progress(format, args...)
	}
}
