// Package baseline shows a golden baseline: a test profiles the code it
// guards and compares the profile with one checked into testdata. The
// baseline changes only when someone asks for it:
//
//	HOTBUDGET_UPDATE=1 go test ./examples/baseline    # or: go test ./examples/baseline -hotbudget.update
//
// writes testdata/parse.pb.gz atomically and logs that it did; review and
// commit it like any other golden file. (For every package at once use the
// variable, HOTBUDGET_UPDATE=1 go test ./...: packages that do not import
// perfassert reject the flag.) Without it a missing baseline fails with the
// command that creates it, and nothing is ever written.
//
// The baseline is recorded in sixteen processes (the test runs again in
// fifteen more while baselines are written), each capture made of several runs,
// and the comparison is process against process, since shares vary more
// between processes than between the runs of one; only this module's
// functions are judged (the runtime's share moves with the machine and the
// garbage collector). Under the race detector (CI runs `go test -race ./...`) the
// capture is compared with testdata/parse.race.pb.gz instead, written by
//
//	HOTBUDGET_UPDATE=1 go test -race ./examples/baseline
//
// since -race changes every share of the profile. Both baselines hold two
// recordings of sixteen processes, made on two machines at different times
// (HOTBUDGET_UPDATE=add added the second): the race baseline of one machine
// failed unchanged code on another in 2 of 3 runs, since machines and their
// states move shares, and the two recordings together passed it 6 of 6.
//
// TestParseInstructions needs none of that: it counts instructions, which
// repeat from process to process and machine to machine, and its
// baselines (testdata/parse.instructions.pb.gz and the race one) were
// recorded once, in five processes, to learn the few functions whose work
// depends on the per-process hash seed.
package baseline

import (
	"testing"

	"github.com/hotbudget/hotbudget/examples/capture"
	"github.com/hotbudget/hotbudget/perfassert"
)

var input = capture.Input(20000)

func TestParseMatchesBaseline(t *testing.T) {
	p := perfassert.Capture(t, func() { capture.Parse(input) })
	perfassert.MatchBaseline(t, "testdata/parse.pb.gz", p)
}

// TestParseInstructions is the same golden test with the exact instrument:
// it counts the instructions Parse executes under valgrind's callgrind
// (perfassert.Instructions) and compares them with
// testdata/parse.instructions.pb.gz (testdata/parse.race.instructions.pb.gz
// under -race), without statistics: counts do not depend on the machine or
// its load, so this baseline, recorded once on one machine, holds on any
// runner with the same Go version and dependencies. It is skipped, saying
// why, where valgrind is not installed.
func TestParseInstructions(t *testing.T) {
	p := perfassert.Capture(t, func() { capture.Parse(input) }, perfassert.Instructions())
	perfassert.MatchBaseline(t, "testdata/parse.instructions.pb.gz", p)
}
