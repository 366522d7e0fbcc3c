package capture_test

import (
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/examples/capture"
	"github.com/hotbudget/hotbudget/perfassert"
)

var input = capture.Input(20000)

// TestParseHotPath profiles Parse inside the test and bounds its hot path.
// Capture repeats the function until the profile holds enough samples, so
// the bounds are shares of the profile or times per call (PerIteration),
// which do not depend on how long the capture ran.
func TestParseHotPath(t *testing.T) {
	p := perfassert.Capture(t, func() { capture.Parse(input) })
	if p == nil {
		return // Capture reported why (or skipped under go test -cpuprofile)
	}

	// normalizeKey is the hot path: it may take most of Parse, not all of it.
	perfassert.MaxTotalShare(t, p, "github.com/hotbudget/hotbudget/examples/capture.normalizeKey", 0.60)

	// Per call, the whole of Parse stays under 20ms for 20,000 lines, even
	// on a slow CI machine; not checked under the race detector, which
	// slows it several times over.
	perfassert.MaxTotalTime(t, p, "github.com/hotbudget/hotbudget/examples/capture.Parse", 20*time.Millisecond,
		perfassert.PerIteration(), perfassert.SkipUnderRace())
}

// BenchmarkParse is what the example GitHub workflow profiles on both sides
// of a pull request (go test -bench BenchmarkParse -cpuprofile ...).
func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		capture.Parse(input)
	}
}
