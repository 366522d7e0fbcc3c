package perfexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/binsym"
)

// buildBench writes testdata/bench_test.go.txt as a module in a temporary
// directory and builds its test binary.
func buildBench(t testing.TB, flags ...string) string {
	t.Helper()
	src, err := os.ReadFile("testdata/bench_test.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"bench_test.go": src,
		"go.mod":        []byte("module example.com/bench\n\ngo 1.24\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "bench.test")
	cmd := exec.Command("go", append(append([]string{"test", "-c", "-o", bin}, flags...), ".")...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	return bin
}

// shares is each function's self and total share of a profile's
// samples, and the sample count.
func shares(p *profile.Profile) (self, total map[string]float64, n int64) {
	self, total = map[string]float64{}, map[string]float64{}
	for _, s := range p.Sample {
		c := s.Value[0]
		n += c
		seen := map[string]bool{}
		for i, l := range s.Location {
			for j, ln := range l.Line {
				name := ln.Function.Name
				if i == 0 && j == 0 {
					self[name] += float64(c)
				}
				if !seen[name] {
					seen[name] = true
					total[name] += float64(c)
				}
			}
		}
	}
	for k := range self {
		self[k] /= float64(n)
	}
	for k := range total {
		total[k] /= float64(n)
	}
	return self, total, n
}

// TestNamesAsPprof runs a benchmark binary under perf events with
// -test.cpuprofile: every function of the benchmark and of package testing
// that runtime/pprof sampled is in perf's profile under the same name, and
// so is every inlined call. The benchmark has a function inlined into
// another, a frameless leaf whose caller a frame-pointer walk misses, a
// generic method and a goroutine on another thread. (Whether the samples
// give each function its share of the CPU time is TestSharesMatchReference's
// question: the two samplers are not compared with each other, since on
// some machines neither is exact; see docs/samplers.md.)
func TestNamesAsPprof(t *testing.T) {
	bin := buildBench(t)
	raw := filepath.Join(t.TempDir(), "cpu.pprof")
	// A count of iterations, not of seconds: about 1s of CPU time with
	// perf's cost (an iteration takes about 145us), however busy the
	// machine. Beside other jobs at load 15, "-test.benchtime=1s" ran 272ms
	// of CPU time: 25 samples of runtime/pprof.
	cmd := exec.Command(bin, "-test.run=^$", "-test.bench=Mix", "-test.benchtime=4000x", "-test.cpu=2", "-test.cpuprofile", raw)
	cmd.Dir = filepath.Dir(bin)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	res, err := Run(cmd, Options{})
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("perf events refused here (%v): sysctl kernel.perf_event_paranoid=2 allows them", err)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	sym, err := binsym.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	perf, err := Profile(res, sym)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("perf events: %d samples, %d lost, %.0f samples/s of user CPU time (asked %.0f), %v user CPU",
		len(res.Samples), res.Lost, res.Rate(), 1/res.Period.Seconds(), res.UserTime)
	f, err := os.Open(raw)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := profile.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, pt, pn := shares(perf)
	_, rt, rn := shares(ref)
	t.Logf("runtime/pprof: %d samples", rn)
	if pn < 2000 || rn < 50 {
		t.Fatalf("too few samples: %d perf, %d pprof", pn, rn)
	}
	for _, name := range []string{
		"example.com/bench.square",                   // inlined
		"example.com/bench.heavy",                    // square's caller
		"example.com/bench.leaf",                     // frameless
		"example.com/bench.callsLeaf",                // leaf's caller
		"example.com/bench.(*acc[go.shape.int]).add", // generic method
		"example.com/bench.BenchmarkMix.func1",       // the goroutine
	} {
		if rt[name] == 0 || pt[name] == 0 {
			t.Errorf("%s: share %.3f in perf's profile, %.3f in runtime/pprof's: both should have it", name, pt[name], rt[name])
		}
	}
	// Every function of the benchmark and of package testing that holds
	// 2% of runtime/pprof's samples, and every inlined call (callee
	// inlined into caller) in locations that hold 1%, has the same name
	// in perf's profile. (A runtime function may spend its time in the
	// kernel, which perf events do not sample: runtime.asyncPreempt held
	// 2.3% of runtime/pprof's samples in one run and none of perf's.)
	for name, v := range rt {
		user := strings.HasPrefix(name, "example.com/bench.") || strings.HasPrefix(name, "testing.")
		if user && v >= 0.02 && pt[name] == 0 {
			t.Errorf("%s: %.1f%% in runtime/pprof's profile, not in perf's", name, 100*v)
		}
	}
	pin, rin := inlined(perf), inlined(ref)
	for pair, v := range rin {
		if v >= 0.02 && pin[pair] == 0 {
			t.Errorf("runtime/pprof has %s inlined into %s in %.1f%% of its samples, perf's profile not at all", pair[0], pair[1], 100*v)
		}
	}
	if rin[[2]string{"example.com/bench.square", "example.com/bench.heavy"}] < 0.05 {
		t.Errorf("runtime/pprof's profile lacks square inlined into heavy: the benchmark no longer tests inlining")
	}
	if rate := res.Rate() * res.Period.Seconds(); rate < 0.7 || rate > 1.1 {
		t.Errorf("delivered %.0f samples per second of user CPU time, asked %.0f", res.Rate(), 1/res.Period.Seconds())
	}
	if res.Lost*100 > uint64(len(res.Samples)) {
		t.Errorf("%d samples lost of %d", res.Lost, len(res.Samples))
	}
}

// inlined is the share of p's samples whose stacks hold each (callee,
// caller) pair of inlined calls.
func inlined(p *profile.Profile) map[[2]string]float64 {
	out := map[[2]string]float64{}
	n := 0.0
	for _, s := range p.Sample {
		n += float64(s.Value[0])
		seen := map[[2]string]bool{}
		for _, l := range s.Location {
			for i := 0; i+1 < len(l.Line); i++ {
				pair := [2]string{l.Line[i].Function.Name, l.Line[i+1].Function.Name}
				if !seen[pair] {
					seen[pair] = true
					out[pair] += float64(s.Value[0])
				}
			}
		}
	}
	for k := range out {
		out[k] /= n
	}
	return out
}

// TestPIE samples a position-independent test binary, whose addresses
// need the mapping read while it ran.
func TestPIE(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the standard library for PIE")
	}
	bin := buildBench(t, "-buildmode=pie")
	cmd := exec.Command(bin, "-test.run=^$", "-test.bench=Pure", "-test.benchtime=300x")
	cmd.Dir = filepath.Dir(bin)
	res, err := Run(cmd, Options{})
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("perf events refused here (%v)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	sym, err := binsym.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !sym.PIE || res.Mapping.Start == 0 || res.Mapping.Start == sym.TextAddr {
		t.Fatalf("PIE %v, mapping %+v, text at %#x: want a PIE mapped elsewhere", sym.PIE, res.Mapping, sym.TextAddr)
	}
	p, err := Profile(res, sym)
	if err != nil {
		t.Fatal(err)
	}
	self, total, n := shares(p)
	// BenchmarkPure is heavy and callsLeaf; the start of the binary and
	// the runtime take some samples too, more on a loaded machine.
	bench := 0.0
	for _, f := range []string{"heavy", "square", "callsLeaf", "leaf"} {
		bench += self["example.com/bench."+f]
	}
	if total["example.com/bench.BenchmarkPure"] < 0.5 || bench < 0.5 {
		t.Errorf("of %d samples BenchmarkPure holds %.2f, its functions' self %.2f: the addresses were not mapped", n, total["example.com/bench.BenchmarkPure"], bench)
	}
	for _, l := range p.Location {
		if len(l.Line) == 0 && l.Address >= res.Mapping.Start && l.Address < res.Mapping.Limit {
			t.Errorf("%#x in the binary's mapping has no function", l.Address)
		}
	}
}

// TestNotATrampoline: an executable that does not import this package
// never says it is ready; Run says so instead of running the program.
func TestNotATrampoline(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("perf events exist only on Linux: Run starts nothing")
	}
	cmd := exec.Command("/bin/sh", "-c", "echo ran")
	var out strings.Builder
	cmd.Stdout = &out
	_, err := Run(cmd, Options{Trampoline: "/bin/true"})
	if !errors.Is(err, errNoTrampoline) {
		t.Errorf("Run with /bin/true as the trampoline: %v, want %v", err, errNoTrampoline)
	}
	if out.Len() > 0 {
		t.Errorf("the program ran: %q", out.String())
	}
}

// TestExitStatus: the program's failure is Run's error, its samples kept;
// a program that cannot be found is an error before anything runs.
func TestExitStatus(t *testing.T) {
	res, err := Run(exec.Command("/bin/sh", "-c", "exit 3"), Options{})
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("perf events refused here (%v)", err)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || res == nil {
		t.Errorf("Run(exit 3): %v, %v", res, err)
	}
	if _, err := Run(exec.Command(filepath.Join(t.TempDir(), "missing")), Options{}); err == nil {
		t.Error("Run of a missing program succeeded")
	}
}

// BenchmarkSymbolise is the time to turn one run's samples into a profile:
// the binary's symbols read (binsym.Open) and the samples' addresses
// symbolised from its DWARF (Profile), for a test binary of about 30,000
// samples (3 s of a benchmark at 10 kHz).
func BenchmarkSymbolise(b *testing.B) {
	bin := buildBench(b)
	cmd := exec.Command(bin, "-test.run=^$", "-test.bench=Mix", "-test.benchtime=3s", "-test.cpu=2")
	cmd.Dir = filepath.Dir(bin)
	res, err := Run(cmd, Options{})
	if errors.Is(err, ErrUnavailable) {
		b.Skipf("perf events refused here (%v)", err)
	}
	if err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(bin)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		sym, err := binsym.Open(bin)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Profile(res, sym); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(res.Samples)), "samples")
	b.ReportMetric(float64(st.Size())/1e6, "MB-binary")
}

// BenchmarkOverhead measures what sampling costs the program sampled:
// each iteration runs testdata's BenchmarkPure for 500 iterations on one
// CPU, unprofiled, under perf events at 10 and 5 kHz, and with
// -test.cpuprofile, and reports the program's user and system CPU time
// per iteration of BenchmarkPure (CPU time, not wall time: the machine
// may be shared). Compare the sub-benchmarks with benchstat:
//
//	go test ./internal/perfexec -run '^$' -bench Overhead -count 10 > o.txt
//	benchstat -col /sampler o.txt
func BenchmarkOverhead(b *testing.B) {
	bin := buildBench(b)
	const ops = 500
	for _, c := range []struct {
		name   string
		period time.Duration // 0: no perf events
		pprof  bool
	}{{"none", 0, false}, {"perf10kHz", 100 * time.Microsecond, false}, {"perf5kHz", 200 * time.Microsecond, false}, {"pprof", 0, true}} {
		b.Run("sampler="+c.name, func(b *testing.B) {
			var user, sys time.Duration
			runs := 0
			for b.Loop() {
				args := []string{"-test.run=^$", "-test.bench=Pure", fmt.Sprintf("-test.benchtime=%dx", ops), "-test.cpu=1"}
				if c.pprof {
					args = append(args, "-test.cpuprofile", filepath.Join(b.TempDir(), "cpu.pprof"))
				}
				cmd := exec.Command(bin, args...)
				cmd.Dir = b.TempDir()
				var err error
				if c.period > 0 {
					_, err = Run(cmd, Options{Period: c.period})
				} else {
					err = cmd.Run()
				}
				if errors.Is(err, ErrUnavailable) {
					b.Skipf("perf events refused here (%v)", err)
				}
				if err != nil {
					b.Fatal(err)
				}
				user += cmd.ProcessState.UserTime()
				sys += cmd.ProcessState.SystemTime()
				runs++
			}
			b.ReportMetric(float64(user.Nanoseconds())/float64(runs*ops), "user-ns/op")
			b.ReportMetric(float64(sys.Nanoseconds())/float64(runs*ops), "sys-ns/op")
		})
	}
}
