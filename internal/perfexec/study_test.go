package perfexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/binsym"
	"github.com/hotbudget/hotbudget/internal/perfevent"
	"github.com/hotbudget/hotbudget/internal/samplercheck"
	"golang.org/x/sys/unix"
)

// The sampler study: which sampler gives each function the share of the
// CPU time it really took? A workload of functions with different
// instruction mixes (an ALU loop with an inlined callee, a loop calling a
// frameless leaf, a cache-missing pointer chase, a chain of divisions, and
// in the "mix" shape a generic method on a goroutine the iteration starts
// and waits for) measures each call's thread CPU time itself
// (CLOCK_THREAD_CPUTIME_ID around every call: the reference), while one of
// the samplers samples the same execution:
//
//   - inherit: this package's Run, the cpu-clock event inherited by every
//     thread, at its default period (what `hotbudget record` uses);
//   - thread: a cpu-clock event on the workload's locked thread, as
//     perfassert's Capture opens it, at perfevent.DefaultPeriod;
//   - pprof: runtime/pprof at 100 Hz (go test -cpuprofile's rate);
//   - none: no sampler (the reference alone, to see what sampling costs).
//
// Each function's sampled share among the workload's functions is compared
// with its reference share. Run it on purpose, idle and beside busy loops:
//
//	go test ./internal/perfexec -run '^$' -bench SamplerStudy -count 5 > s.txt
//	benchstat -col /sampler s.txt
//
// The metrics are percentage points: "<function>-ref" the reference share,
// "<function>-err" the sampler's share minus the reference.

// studyEnv carries the child's configuration (JSON of studyConfig).
const studyEnv = "HOTBUDGET_SAMPLER_STUDY"

type studyConfig struct {
	Shape   string        // "pure" or "mix"
	Sampler string        // "inherit", "thread", "pprof", "none"
	Period  time.Duration // the thread sampler's period
	CPU     time.Duration // how much CPU time the workload runs for
	Scale   float64       // multiplies every function's work
	Out     string        // where the child writes its studyResult
	Pprof   string        // runtime/pprof's profile, for Sampler "pprof"
}

type studyResult struct {
	RefNanos map[string]int64 // thread CPU time per function
	Samples  map[string]int64 // the in-process sampler's samples per function
	Migrated int              // calls whose thread changed (left out)
	Iters    int
}

// The workload is samplercheck's (ALU, CallsLeaf, Divide, Acc.Add) and a
// pointer chase.
var studySink uint64

// studyChain is a random cyclic permutation over 8 MiB: each step of
// studyChase misses the first caches.
var studyChain = sync.OnceValue(func() []uint32 {
	const n = 1 << 21
	perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
	next := make([]uint32, n)
	for i := range n {
		next[perm[i]] = uint32(perm[(i+1)%n])
	}
	return next
})

//go:noinline
func studyChase(chain []uint32, n int, at uint32) uint32 {
	for range n {
		at = chain[at]
	}
	return at
}

// studyGroup is the timed function a frame's function belongs to, "" for
// the rest.
func studyGroup(name string) string {
	if strings.HasSuffix(name, ".studyChase") {
		return "chase"
	}
	return samplercheck.GroupOf(name)
}

func threadNanos() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}

// TestStudyChild is the study's child process: nothing happens unless the
// study started it (BenchmarkSamplerStudy sets studyEnv).
func TestStudyChild(t *testing.T) {
	raw := os.Getenv(studyEnv)
	if raw == "" {
		return
	}
	var c studyConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		t.Fatal(err)
	}
	res, err := runStudy(c)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if err := os.WriteFile(c.Out, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func runStudy(c studyConfig) (*studyResult, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	chain := studyChain()
	res := &studyResult{RefNanos: map[string]int64{}, Samples: map[string]int64{}}
	sc := func(n int) int { return max(1, int(float64(n)*c.Scale)) }
	nALU, nLeaf, nChase, nDiv, nAdd := sc(20000), sc(15000), sc(300), sc(3000), sc(10000)

	var ev *perfevent.Event
	switch c.Sampler {
	case "thread":
		var err error
		ev, err = perfevent.Open(perfevent.Config{CPU: -1, Period: c.Period, Disabled: true, Pages: 256})
		if err != nil {
			return nil, err
		}
		defer ev.Close()
		if err := ev.Enable(); err != nil {
			return nil, err
		}
	case "pprof":
		f, err := os.Create(c.Pprof)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	drain := func() {
		if ev == nil {
			return
		}
		ev.Read(func(s *perfevent.Sample) {
			if len(s.Callchain) == 0 {
				return
			}
			name := ""
			if f := runtime.FuncForPC(uintptr(s.Callchain[0])); f != nil {
				name = f.Name()
			}
			res.Samples[studyGroup(name)]++
		})
	}
	timed := func(group string, f func()) {
		tid := unix.Gettid()
		t0 := threadNanos()
		f()
		t1 := threadNanos()
		if unix.Gettid() != tid {
			res.Migrated++
			return
		}
		res.RefNanos[group] += t1 - t0
	}
	start := threadNanos()
	var at uint32
	for threadNanos()-start < c.CPU.Nanoseconds() {
		res.Iters++
		if c.Shape == "mix" {
			var done sync.WaitGroup
			a := &samplercheck.Acc{}
			var d int64
			done.Add(1)
			go func() {
				defer done.Done()
				tid := unix.Gettid()
				t0 := threadNanos()
				a.Add(nAdd)
				t1 := threadNanos()
				if unix.Gettid() == tid {
					d = t1 - t0
				}
			}()
			done.Wait()
			res.RefNanos["add"] += d
			studySink += a.V
		}
		timed("alu", func() { studySink += samplercheck.ALU(nALU) })
		timed("callsleaf", func() { studySink += samplercheck.CallsLeaf(nLeaf) })
		timed("chase", func() { at = studyChase(chain, nChase, at) })
		timed("divide", func() { studySink += samplercheck.Divide(nDiv) })
		if ev != nil {
			if n, size := ev.Buffered(); n > size/2 {
				drain()
			}
		}
	}
	studySink += uint64(at)
	if ev != nil {
		ev.Disable()
		drain()
	}
	return res, nil
}

func BenchmarkSamplerStudy(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	shapes := []string{"pure", "mix"}
	samplers := []string{"inherit", "inherit@500us", "thread", "pprof", "none"}
	if s := os.Getenv("HOTBUDGET_STUDY_SAMPLERS"); s != "" {
		samplers = strings.Split(s, ",")
	}
	if s := os.Getenv("HOTBUDGET_STUDY_SHAPES"); s != "" {
		shapes = strings.Split(s, ",")
	}
	scales := []float64{1}
	if s := os.Getenv("HOTBUDGET_STUDY_SCALES"); s != "" {
		scales = nil
		for _, f := range strings.Split(s, ",") {
			var x float64
			fmt.Sscan(f, &x)
			scales = append(scales, x)
		}
	}
	period := perfevent.DefaultPeriod
	if s := os.Getenv("HOTBUDGET_STUDY_PERIOD"); s != "" {
		period, _ = time.ParseDuration(s)
	}
	for _, shape := range shapes {
		for _, scale := range scales {
			for _, sampler := range samplers {
				name, p := sampler, period
				if i := strings.IndexByte(sampler, '@'); i >= 0 {
					name = sampler[:i]
					if p, err = time.ParseDuration(sampler[i+1:]); err != nil {
						b.Fatal(err)
					}
				} else if name == "inherit" {
					p = DefaultPeriod
				}
				b.Run(fmt.Sprintf("shape=%s/scale=%g/sampler=%s", shape, scale, sampler), func(b *testing.B) {
					var ref, got map[string]float64
					for b.Loop() {
						r, g, _, err := studyRun(self, studyConfig{Shape: shape, Sampler: name, Period: p, CPU: 2 * time.Second, Scale: scale, Out: filepath.Join(b.TempDir(), "res.json"), Pprof: filepath.Join(b.TempDir(), "cpu.pprof")})
						if errors.Is(err, ErrUnavailable) {
							b.Skip(err)
						}
						if err != nil {
							b.Fatal(err)
						}
						ref, got = r, g
					}
					for k, v := range ref {
						b.ReportMetric(100*v, k+"-ref")
						if got != nil {
							b.ReportMetric(100*(got[k]-v), k+"-err")
						}
					}
				})
			}
		}
	}
}

// studyRun runs one child and returns the reference shares and the
// sampler's (nil for "none").
func studyRun(self string, c studyConfig) (ref, got map[string]float64, n int64, err error) {
	cfg, _ := json.Marshal(c)
	cmd := exec.Command(self, "-test.run=^TestStudyChild$")
	cmd.Env = append(os.Environ(), studyEnv+"="+string(cfg))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	var res *Result
	if c.Sampler == "inherit" {
		res, err = Run(cmd, Options{Period: c.Period})
	} else {
		err = cmd.Run()
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%w\n%s", err, out.String())
	}
	data, err := os.ReadFile(c.Out)
	if err != nil {
		return nil, nil, 0, err
	}
	var sr studyResult
	if err := json.Unmarshal(data, &sr); err != nil {
		return nil, nil, 0, err
	}
	ref = norm(sr.RefNanos)
	var counts map[string]int64
	switch c.Sampler {
	case "thread":
		counts = sr.Samples
	case "inherit":
		sym, err := binsym.Open(self)
		if err != nil {
			return nil, nil, 0, err
		}
		p, err := Profile(res, sym)
		if err != nil {
			return nil, nil, 0, err
		}
		counts = leafGroups(p)
	case "pprof":
		f, err := os.Open(c.Pprof)
		if err != nil {
			return nil, nil, 0, err
		}
		p, err := profile.Parse(f)
		f.Close()
		if err != nil {
			return nil, nil, 0, err
		}
		counts = leafGroups(p)
	default:
		return ref, nil, 0, nil
	}
	if c.Shape == "mix" && strings.HasPrefix(c.Sampler, "thread") {
		delete(ref, "add") // the goroutine runs on another thread
		ref = renorm(ref)
	}
	got = norm(counts)
	for k, v := range counts {
		if _, ok := ref[k]; ok {
			n += v
		}
	}
	return ref, got, n, nil
}

func leafGroups(p *profile.Profile) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		if len(s.Location) == 0 || len(s.Location[0].Line) == 0 {
			continue
		}
		out[studyGroup(s.Location[0].Line[0].Function.Name)] += s.Value[0]
	}
	return out
}

func norm(m map[string]int64) map[string]float64 {
	out := map[string]float64{}
	var n int64
	for k, v := range m {
		if k != "" {
			n += v
		}
	}
	for k, v := range m {
		if k != "" && n > 0 {
			out[k] = float64(v) / float64(n)
		}
	}
	return out
}

func renorm(m map[string]float64) map[string]float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	for k := range m {
		m[k] /= s
	}
	return m
}

// TestSharesMatchReference samples the study's workload ("mix": a handoff
// to a goroutine on another thread, then four functions of different
// instruction mixes, a frameless leaf among them) with Run at its default
// period, and compares each function's share of the samples with its share
// of the CPU time the workload measured itself (the thread's CPU clock
// around every call, in the same execution): within samplercheck.Bound,
// three points plus four standard errors. On the machines this was
// measured on (idle and beside two busy loops) the difference was at most
// 1.4 points.
//
// It judges only what record would use: a run is judged where
// samplercheck's probes agree before it (samplercheck.Recent, as record's
// first run) and after it (samplercheck.Again with record's probe of 300
// samples, as after each of record's runs). Where they disagree record
// profiles with runtime/pprof, or refuses the run, and the test is skipped
// with the probes' figures: a biased host is not a failure of hotbudget.
// A run beyond the bound is tried once more (a second independent run and
// checks) before the test fails: beside other jobs (load 4) one run in
// three was 0.1-0.2 points beyond it for one function.
func TestSharesMatchReference(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for try := 1; ; try++ {
		lines, failed := sharesTry(t, self)
		if !failed {
			for _, l := range lines {
				t.Log(l)
			}
			return
		}
		if try == 2 {
			t.Errorf("two runs beyond the bound; the second:\n%s", strings.Join(lines, "\n"))
			return
		}
		t.Logf("run %d beyond the bound, tried again:\n%s", try, strings.Join(lines, "\n"))
	}
}

// sharesTry is one run of TestSharesMatchReference: its lines, and whether
// a function's share was beyond the bound. It skips t where the sampler is
// not record's to use.
func sharesTry(t *testing.T, self string) (lines []string, failed bool) {
	t.Helper()
	r, err := samplercheck.Recent(DefaultPeriod)
	if errors.Is(err, samplercheck.ErrRace) {
		t.Skip("the race detector moves the workload's time into its own functions, which the reference charges to the workload")
	}
	if err == nil && r.Misattributes() {
		t.Skipf("this machine's perf events are wrong now, and record profiles with runtime/pprof while they are: %s", r)
	}
	ref, got, n, err := studyRun(self, studyConfig{Shape: "mix", Sampler: "inherit", Period: DefaultPeriod, CPU: time.Second, Scale: 1,
		Out: filepath.Join(t.TempDir(), "res.json")})
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("perf events refused here (%v)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if fresh, pooled, err := samplercheck.Again(DefaultPeriod, 300); err == nil {
		if w, wrong := samplercheck.Wrong(fresh, pooled); wrong {
			t.Skipf("this machine's perf events went wrong during the run, and record would refuse it: %s", w)
		}
	}
	if len(ref) != 5 || n < 4000 {
		t.Fatalf("%d functions timed, %d samples in them: want 5 and some 10,000", len(ref), n)
	}
	for _, k := range []string{"add", "alu", "callsleaf", "chase", "divide"} {
		limit := samplercheck.Bound(ref[k], n)
		d := 100 * (got[k] - ref[k])
		line := fmt.Sprintf("%-9s sampled %5.1f%%  measured %5.1f%%  %+5.1f points (at most %.1f)", k, 100*got[k], 100*ref[k], d, limit)
		if math.Abs(d) > limit {
			line += "  BEYOND"
			failed = true
		}
		lines = append(lines, line)
	}
	return lines, failed
}
