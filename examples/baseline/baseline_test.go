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
// baselines were recorded once, in five processes, to learn the few
// functions whose work depends on the per-process hash seed. Counts are
// those of one Go version, though: CI runs the tests on the two supported
// Go releases, so the test keeps a baseline per release,
// testdata/go1.26/parse.instructions.pb.gz (recorded by go1.26.8) and
// testdata/go1.27/parse.instructions.pb.gz (go1.27.3), each with its race
// baseline beside it, and each release's run is judged against its own.
// One release's are recorded by
//
//	GOTOOLCHAIN=go1.27.3 HOTBUDGET_UPDATE=1 go test -run Instructions ./examples/baseline
//
// (and again with -race).
package baseline

import (
	"go/version"
	"path/filepath"
	"runtime"
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
// (perfassert.Instructions) and compares them with this Go release's
// baseline, testdata/go1.26/parse.instructions.pb.gz under Go 1.26
// (parse.race.instructions.pb.gz beside it under -race), without
// statistics: counts do not depend on the machine or its load, so a
// baseline recorded once on one machine holds on any runner with the same
// Go version and dependencies. Another Go release compiles Parse into other
// instructions, so each release CI runs has its own baseline; a release
// without one fails with the command that records it. It is skipped,
// saying why, where valgrind is not installed.
func TestParseInstructions(t *testing.T) {
	p := perfassert.Capture(t, func() { capture.Parse(input) }, perfassert.Instructions())
	release := version.Lang(runtime.Version()) // "go1.26"
	perfassert.MatchBaseline(t, filepath.Join("testdata", release, "parse.instructions.pb.gz"), p)
}
