package perfassert

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/perfevent"
	"github.com/hotbudget/hotbudget/internal/samplercheck"
	"github.com/hotbudget/hotbudget/internal/testchild"
)

// TestSamplerRefusedFallsBack: where the kernel refuses perf events, a
// capture uses runtime/pprof alone and says once why and how to allow the
// fast sampler; a capture that asks for the perf sampler fails saying why.
// The refusal is simulated (this machine allows perf events).
func TestSamplerRefusedFallsBack(t *testing.T) {
	if testchild.Rerun(t, testchild.RuntimeRateLine) {
		return
	}
	refusal := fmt.Errorf("perfevent: %w: refused by the kernel (permission denied) at kernel.perf_event_paranoid = 4, which forbids perf events to unprivileged processes", perfevent.ErrUnavailable)
	old := perfState
	perfState = func() error { return refusal }
	samplerNote = sync.Once{}
	t.Cleanup(func() { perfState = old })
	t.Setenv(SamplerEnv, "")

	capturedWithPprof(t, "sampler: runtime/pprof at ", "the perf sampler (2,000 Hz) is unavailable", "perf_event_paranoid = 4", "`sysctl kernel.perf_event_paranoid=2`")
	if _, err := CaptureProfile(func() {}, Sampler("perf")); !errors.Is(err, perfevent.ErrUnavailable) || !strings.Contains(err.Error(), "paranoid") {
		t.Errorf("Sampler(\"perf\") where refused: %v", err)
	}
}

// TestSamplerMisattributesFallsBack: on a machine whose cpu-clock samples
// failed the check against a workload of known cost, a capture uses
// runtime/pprof and says why; Sampler("perf") still uses perf events. The
// check's finding is simulated (this machine's samples agree).
func TestSamplerMisattributesFallsBack(t *testing.T) {
	if testchild.Rerun(t, testchild.RuntimeRateLine) {
		return
	}
	if err := perfState(); err != nil {
		t.Skipf("perf events refused here: %v", err)
	}
	old := checkHost
	checkHost = func(period time.Duration) (*samplercheck.Result, error) { return wrongResult(period), nil }
	samplerNote = sync.Once{}
	t.Cleanup(func() { checkHost = old })
	t.Setenv(SamplerEnv, "")
	t.Setenv(samplercheck.Env, "")

	capturedWithPprof(t, "sampler: runtime/pprof at ", "the perf sampler (2,000 Hz) is not used: on this machine cpu-clock samples every 500µs disagree with the thread's CPU clock", "HOTBUDGET_SAMPLER=perf uses it anyway")
	p, err := CaptureProfile(func() { ownWork(20_000) }, Sampler("perf"), MinSamples(20), MaxDuration(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if rec, _, _ := meta.Get(p); rec.Sampler != samplerPerf {
		t.Errorf("Sampler(\"perf\") on a misattributing machine: sampler %q, want perf", rec.Sampler)
	}
}

// capturedWithPprof captures some work at the default sampler and wants
// runtime/pprof to have taken it, the test log saying each of want.
func capturedWithPprof(t *testing.T, want ...string) {
	t.Helper()
	r := &recT{}
	p := Capture(r, func() { ownWork(20_000) }, MinSamples(20), MaxDuration(2*time.Second))
	if p == nil {
		t.Fatalf("no profile: %v", r.errs)
	}
	if rec, _, _ := meta.Get(p); rec.Sampler != samplerPprof {
		t.Errorf("record says sampler %q, want pprof", rec.Sampler)
	}
	logs := strings.Join(r.logs, "\n")
	t.Log(logs)
	for _, w := range want {
		if !strings.Contains(logs, w) {
			t.Errorf("the log lacks %q:\n%s", w, logs)
		}
	}
}

// wrongResult is a check's finding on a sampler that gives alu 65% of the
// samples against 50% of the measured time.
func wrongResult(period time.Duration) *samplercheck.Result {
	r := samplercheck.Judge(map[string]time.Duration{"alu": 50, "callsleaf": 50}, map[string]int64{"alu": 1300, "callsleaf": 700})
	r.Period = period
	return r
}

// TestSamplerWrongDuringCaptureRedone: the check lets the perf sampler
// take a capture, and the capture's own check (a probe after it) finds the
// samples misattributed: the capture is not kept but made again with
// runtime/pprof, its line says why and what time verdicts on it can see,
// and the instrument that sees less. A capture whose check after it
// agrees keeps the perf sampler and says by how much it agreed. The
// checks' findings are simulated.
func TestSamplerWrongDuringCaptureRedone(t *testing.T) {
	if testchild.Rerun(t, testchild.RuntimeRateLine) {
		return
	}
	if err := perfState(); err != nil {
		t.Skipf("perf events refused here: %v", err)
	}
	oldHost, oldAgain := checkHost, checkAgain
	t.Cleanup(func() { checkHost, checkAgain = oldHost, oldAgain })
	right := func(period time.Duration) *samplercheck.Result {
		r := samplercheck.Judge(map[string]time.Duration{"alu": 50, "callsleaf": 50}, map[string]int64{"alu": 1010, "callsleaf": 990})
		r.Period = period
		return r
	}
	hosts, agains := 0, 0
	checkHost = func(period time.Duration) (*samplercheck.Result, error) { hosts++; return right(period), nil }
	wrong := true
	checkAgain = func(period time.Duration, n int) (*samplercheck.Result, *samplercheck.Result, error) {
		agains++
		if n != probeSamples {
			t.Errorf("probe of %d samples after the capture, want %d", n, probeSamples)
		}
		if wrong {
			return wrongResult(period), wrongResult(period), nil
		}
		return right(period), right(period), nil
	}
	t.Setenv(SamplerEnv, "")
	t.Setenv(samplercheck.Env, "")

	r := &recT{}
	p := Capture(r, func() { ownWork(15_000); otherWork(5_000) }, MinSamples(100), MaxDuration(3*time.Second))
	if p == nil {
		t.Fatalf("no profile: %v", r.errs)
	}
	if rec, _, _ := meta.Get(p); rec.Sampler != samplerPprof {
		t.Errorf("a capture whose sampler was found wrong after it: sampler %q, want pprof (redone)", rec.Sampler)
	}
	if hosts != 1 || agains != 1 {
		t.Errorf("%d checks before and %d after the captures, want 1 (the perf capture's; the redone one is not checked) and 1", hosts, agains)
	}
	logs := strings.Join(r.logs, "\n")
	t.Log(logs)
	for _, w := range []string{"redone with runtime/pprof: the perf sampler's check after the first try found alu +15.0 points off its measured share (7.5 allowed)",
		"it went wrong during a capture, which was redone with runtime/pprof: cpu-clock samples every 500µs disagree",
		"time verdicts on captures like this one see changes of", "perfassert.Instructions() counts instructions exactly"} {
		if !strings.Contains(logs, w) {
			t.Errorf("the log lacks %q", w)
		}
	}

	wrong = true
	r = &recT{}
	p = Capture(r, func() { ownWork(20_000) }, Sampler("perf"), MinSamples(20), MaxDuration(2*time.Second))
	if rec, _, _ := meta.Get(p); p == nil || rec.Sampler != samplerPerf || agains != 1 {
		t.Errorf("Sampler(\"perf\"): sampler %q after %d checks, want perf unchecked", rec.Sampler, agains)
	}

	wrong = false
	r = &recT{}
	p = Capture(r, func() { ownWork(20_000) }, MinSamples(20), MaxDuration(2*time.Second))
	if rec, _, _ := meta.Get(p); p == nil || rec.Sampler != samplerPerf {
		t.Errorf("a capture whose sampler agreed after it: sampler %q, want perf", rec.Sampler)
	}
	if logs := strings.Join(r.logs, "\n"); !strings.Contains(logs, "perf sampler checked before and after: within 0.5 points") || strings.Contains(logs, "Instructions()") {
		t.Errorf("the log of a checked perf capture:\n%s", logs)
	}
}

var otherSink uint64

// otherWork is a second function of the captured work, so that its
// shares have a standard error.
//
//go:noinline
func otherWork(n int) {
	x := otherSink | 5
	for range n {
		x = x*2862933555777941757 + 3037000493
	}
	otherSink = x
}
