// Package baseline shows a golden baseline: a test profiles the code it
// guards and compares the profile with one checked into testdata. The
// baseline changes only when someone asks for it:
//
//	go test ./examples/baseline -hotbudget.update      # or HOTBUDGET_UPDATE=1 go test ./examples/baseline
//
// writes testdata/parse.pb.gz atomically and logs that it did; review and
// commit it like any other golden file. Without the flag a missing baseline
// fails with the command that creates it, and nothing is ever written.
//
// Under the race detector (CI runs `go test -race ./...`) the capture is
// compared with testdata/parse.race.pb.gz instead, written by
//
//	go test -race ./examples/baseline -hotbudget.update
//
// since -race changes every share of the profile.
package baseline

import (
	"regexp"
	"testing"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/examples/capture"
	"github.com/hotbudget/hotbudget/perfassert"
)

var input = capture.Input(20000)

var capturePkg = regexp.MustCompile(`^github\.com/hotbudget/hotbudget/examples/capture\.`)

func TestParseMatchesBaseline(t *testing.T) {
	p := perfassert.Capture(t, func() { capture.Parse(input) }, perfassert.MinSamples(100))
	if p == nil {
		return
	}
	perfassert.MatchBaseline(t, "testdata/parse.pb.gz", p,
		// Judge this package's functions, by their total time, as shares of
		// the time spent in them: the runtime's share moves with the
		// machine, the garbage collector (its assists inside Parse went
		// from 0.6% to 12% of the samples with the other core busy) and
		// -race, so runtime functions are measured but not judged.
		diff.WithMetric(diff.Total),
		diff.WithFocus(capturePkg),
		diff.WithOnly(capturePkg),
		// The baseline was recorded on another machine, in another run: a
		// single profile a side only models sampling noise, so allow for the
		// rest. Keep baselines per CI machine type to gate more tightly.
		diff.WithMinChange(0.5, 0),
	)
}
