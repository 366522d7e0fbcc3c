package perfassert

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/loaders"
)

var (
	typedMu   sync.Mutex // parallel captures share the sink
	typedSink []byte
)

// typedWork loops and allocates one 96-byte slice a call: something for
// both a time capture and its allocation phase to see.
//
//go:noinline
func typedWork(n int) {
	b := make([]byte, 96)
	b[0] = byte(exactLoop(n))
	typedMu.Lock()
	typedSink = b
	typedMu.Unlock()
}

// TestCaptureFactsTyped: a capture's facts (its runs, iterations and
// allocations) go from the capture to its checks typed, not through its
// comments: with the capture's comments removed, Iterations, ProfileName,
// AllocProfile, SplitRuns, a per-iteration time limit (package limits),
// MaxAllocs, NoRegression and MatchBaseline all see them as before, and
// WriteBaseline writes them into the baseline file from the typed value.
func TestCaptureFactsTyped(t *testing.T) {
	p := Capture(t, func() { typedWork(2000) }, MinSamples(20), MinRuns(3), MaxDuration(2*time.Second))
	if p == nil {
		t.Fatal("no capture")
	}
	iters, ok := Iterations(p)
	if !ok || iters < 1 {
		t.Fatalf("Iterations of the capture: %d, %v", iters, ok)
	}
	rec, _ := meta.Known(p)
	runs := len(rec.Runs)
	if _, found, err := AllocProfile(p); !found || err != nil {
		t.Fatalf("the capture holds no allocations: %v", err)
	}
	name := ProfileName(p)

	p.Comments = nil // what a round trip through them would read

	if n, ok := Iterations(p); !ok || n != iters {
		t.Errorf("Iterations without the comments: %d, %v; want %d", n, ok, iters)
	}
	if got := ProfileName(p); got != name || got != "capture of "+t.Name() {
		t.Errorf("ProfileName without the comments: %q, want %q", got, name)
	}
	ap, found, err := AllocProfile(p)
	if !found || err != nil {
		t.Fatalf("AllocProfile without the comments: %v, %v", found, err)
	}
	if n, ok := Iterations(ap); !ok || n < 1 {
		t.Errorf("the allocation profile's iterations: %d, %v", n, ok)
	}
	parts, err := SplitRuns(p)
	if err != nil || len(parts) != runs {
		t.Fatalf("SplitRuns without the comments: %d runs (want %d), %v", len(parts), runs, err)
	}
	var sum int64
	for _, q := range parts {
		n, ok := Iterations(q)
		if !ok {
			t.Fatal("a run records no iterations")
		}
		sum += n
	}
	if sum != iters {
		t.Errorf("the runs' iterations add up to %d, the capture's are %d", sum, iters)
	}
	work := funcName(typedWork)
	rt := &recT{}
	if !MaxTotalTime(rt, p, work, time.Hour, PerIteration()) {
		t.Errorf("a per-iteration time limit without the comments: %q", rt.errs)
	}
	if !MaxAllocs(rt, p, work, 1, PerIteration()) || MaxAllocs(&recT{}, p, work, 0, PerIteration()) {
		t.Errorf("MaxAllocs without the comments: one allocation an iteration not seen: %q", rt.errs)
	}
	rt = &recT{}
	if !NoRegression(rt, p, p) || len(rt.errs) > 0 {
		t.Errorf("NoRegression of a capture against itself: %q", rt.errs)
	}
	if !strings.Contains(strings.Join(rt.logs, "\n"), "allocations") {
		t.Errorf("NoRegression judged no allocations: %q", rt.logs)
	}

	path := filepath.Join(t.TempDir(), "typed.pb.gz")
	if raceEnabled {
		path = racePath(path) // where MatchBaseline looks under -race
	}
	if err := WriteBaseline(path, p); err != nil {
		t.Fatal(err)
	}
	if p.Comments != nil {
		t.Errorf("WriteBaseline changed the capture's comments: %q", p.Comments)
	}
	loaded, err := loaders.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := meta.Kept(loaded); ok {
		t.Fatal("a profile loaded from a file is kept: the test reads nothing from the file")
	}
	if n, ok := Iterations(loaded); !ok || n != iters {
		t.Errorf("the baseline file's iterations: %d, %v; want %d", n, ok, iters)
	}
	if _, found, err := AllocProfile(loaded); !found || err != nil {
		t.Errorf("the baseline file holds no allocations: %v", err)
	}
	rt = &recT{}
	if !MatchBaseline(rt, strings.Replace(path, ".race", "", 1), p) || len(rt.errs) > 0 {
		t.Errorf("MatchBaseline of a capture against its own baseline: %q", rt.errs)
	}
}

// everyInstrumentEnv makes TestEveryInstrumentEveryRun the inner test
// binary's test, capturing with the instrument it names.
const everyInstrumentEnv = "HOTBUDGET_TEST_EVERY_INSTRUMENT"

// TestEveryInstrumentEveryRun runs this test binary again with -count=2
// and a -run pattern, on captures in subtests (two of them parallel, one
// with two captures), with the time instrument (and its allocation phase)
// and with estimated cycles (HOTBUDGET_FULL): every run of every capture is captured and
// judged from its typed facts (TestInstructionsEveryRun does the same for
// instructions).
func TestEveryInstrumentEveryRun(t *testing.T) {
	if inst := os.Getenv(everyInstrumentEnv); inst != "" {
		capture := func(t *testing.T, n int) {
			opts := []CaptureOption{MinSamples(20), MinRuns(2), MaxDuration(time.Second)}
			if inst == "cycles" {
				opts = []CaptureOption{Cycles()}
			}
			p := Capture(t, func() { typedWork(n) }, opts...)
			if p == nil {
				t.Fatal("no capture")
			}
			if _, _, child := exactChild(); child {
				return // counting one capture for the parent
			}
			if runs, ok := Iterations(p); !ok || runs < 1 {
				t.Fatalf("a capture of %d iterations", runs)
			}
			if _, found, err := AllocProfile(p); inst == "time" && (!found || err != nil) {
				t.Fatalf("a time capture without allocations: %v", err)
			}
			if !NoRegression(t, p, p) {
				t.Fatal("a capture regressed against itself")
			}
			t.Logf("every-run capture judged: %s", inst)
		}
		t.Run("serial", func(t *testing.T) { capture(t, 1000) })
		t.Run("parallel", func(t *testing.T) {
			t.Parallel()
			capture(t, 2000)
		})
		t.Run("twice", func(t *testing.T) {
			t.Parallel()
			capture(t, 3000)
			capture(t, 4000)
		})
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range []string{"time", "cycles"} {
		t.Run(inst, func(t *testing.T) {
			if inst == "cycles" {
				// Eight children under callgrind's cache simulation:
				// about a minute.
				testutil.Slow(t, "captures of estimated cycles run twice in subtests")
				needValgrind(t)
			}
			cmd := exec.Command(exe, "-test.run=^TestEveryInstrumentEveryRun$", "-test.count=2", "-test.v", "-test.timeout=10m")
			cmd.Env = append(os.Environ(), everyInstrumentEnv+"="+inst)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go test -count=2 of %s captures in subtests: %v\n%s", inst, err, tail(string(out), 60))
			}
			for _, sub := range []string{"serial", "parallel", "twice"} {
				if n := strings.Count(string(out), "--- PASS: TestEveryInstrumentEveryRun/"+sub+" "); n != 2 {
					t.Errorf("subtest %s passed %d times of 2:\n%s", sub, n, tail(string(out), 60))
				}
			}
			if n := strings.Count(string(out), "every-run capture judged: "+inst); n != 8 {
				t.Errorf("%d captures judged, want 8 (4 a run):\n%s", n, tail(string(out), 60))
			}
		})
	}
}
