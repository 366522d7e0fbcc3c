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
	checkHost = func(period time.Duration) (*samplercheck.Result, error) {
		r := samplercheck.Judge(map[string]time.Duration{"alu": 50, "callsleaf": 50}, map[string]int64{"alu": 700, "callsleaf": 1300})
		r.Period = period
		return r, nil
	}
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
