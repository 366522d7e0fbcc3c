package perfassert_test

import (
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/internal/testchild"
	"github.com/hotbudget/hotbudget/perfassert"
)

// TestCaptureRate: Rate(500) samples every 2 ms. A rate other than
// runtime/pprof's 100 Hz makes the runtime print testchild.RuntimeRateLine
// on stderr once per profiling round (see Rate; one run here); the test runs in a child
// process that leaves the line out, so that go test ./... stays quiet.
func TestCaptureRate(t *testing.T) {
	if testchild.Rerun(t, testchild.RuntimeRateLine) {
		return
	}
	p, err := perfassert.CaptureProfile(func() { spin(50_000) }, perfassert.Rate(500), perfassert.MinSamples(50), perfassert.MinRuns(1), perfassert.MaxDuration(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if p.Period != 2_000_000 {
		t.Errorf("Period = %d ns, want 2ms (500 Hz)", p.Period)
	}
}
