package perfassert

import (
	"go/version"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/meta"
)

// exactCapture is a profile of exact counts as Instructions makes it,
// counted by the Go version goVersion; it needs no valgrind.
func exactCapture(goVersion string) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "instructions", Unit: "count"}}, Period: 1,
		PeriodType: &profile.ValueType{Type: "instructions", Unit: "count"}}
	f := &profile.Function{ID: 1, Name: "github.com/hotbudget/hotbudget/perfassert.f"}
	l := &profile.Location{ID: 1, Line: []profile.Line{{Function: f}}}
	p.Function, p.Location = []*profile.Function{f}, []*profile.Location{l}
	p.Sample = []*profile.Sample{{Location: []*profile.Location{l}, Value: []int64{1000},
		Label: map[string][]string{meta.LabelRun: {"1"}}}}
	p.Comments = meta.MarkExact(nil)
	meta.Set(p, meta.Record{Name: "capture", Build: goVersion + " linux/amd64", Race: raceEnabled,
		Instrument: "callgrind test", WorkUnit: meta.WorkIteration, Runs: []meta.Run{{Label: "1", Work: 1}},
		Depends: map[string]string{"go": goVersion, "platform": "linux/amd64"}})
	return p
}

// TestExactBaselineGoRelease checks what a baseline of counts says to a
// test run by another Go version, as a CI matrix of two Go releases runs
// it: the command that records it names the toolchain that counted the
// capture (GOTOOLCHAIN), so that it records this Go version's counts
// wherever it is run, and a baseline of another release is refused with
// the advice to keep one per release, while one of another patch release
// of the same release is only recorded again.
func TestExactBaselineGoRelease(t *testing.T) {
	here := runtime.Version()
	if !version.IsValid(here) {
		t.Skipf("Go %s is not a release that GOTOOLCHAIN can name", here)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "parse.instructions.pb.gz")
	file := path
	if raceEnabled {
		file = racePath(path)
	}
	race := map[bool]string{true: " -race"}[raceEnabled]
	command := "    GOTOOLCHAIN=" + here + " " + UpdateEnv + "=1 go test" + race + " -run '^TestExactBaselineGoRelease$' ./perfassert"

	// No baseline yet: the command records this Go version's.
	rec := &namedRec{name: t.Name()}
	if MatchBaseline(rec, path, exactCapture(here)) {
		t.Fatal("passed without a baseline")
	}
	if msg := strings.Join(rec.errs, "\n"); !strings.HasSuffix(msg, "in the module root:\n"+command) {
		t.Errorf("missing baseline:\n%s\nwant it to end with\n%s", msg, command)
	}

	// A baseline of another Go release.
	other := "go1.0"
	if err := WriteBaseline(file, exactCapture(other)); err != nil {
		t.Fatal(err)
	}
	rec = &namedRec{name: t.Name()}
	if MatchBaseline(rec, path, exactCapture(here)) {
		t.Fatal("a baseline of another Go release was used")
	}
	msg := strings.Join(rec.errs, "\n")
	for _, want := range []string{
		"counted another program: go " + here + " here, go1.0 in the baseline (counts are one Go version's: to judge several Go releases, as a CI matrix does, keep a baseline per release, e.g. in testdata/" + version.Lang(here) + "/); record it again:\n" + command,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("another release's baseline:\n%s\nwant it to contain\n%s", msg, want)
		}
	}

	// A baseline of another patch release of this release: recorded
	// again, no advice.
	patch := version.Lang(here) + ".999"
	if err := WriteBaseline(file, exactCapture(patch)); err != nil {
		t.Fatal(err)
	}
	rec = &namedRec{name: t.Name()}
	if MatchBaseline(rec, path, exactCapture(here)) {
		t.Fatal("a baseline of another patch release was used")
	}
	msg = strings.Join(rec.errs, "\n")
	if !strings.Contains(msg, "counted another program: go "+here+" here, "+patch+" in the baseline; record it again:\n"+command) {
		t.Errorf("another patch release's baseline:\n%s", msg)
	}

	// This Go version's baseline judges the capture.
	if err := WriteBaseline(file, exactCapture(here)); err != nil {
		t.Fatal(err)
	}
	rec = &namedRec{name: t.Name()}
	if !MatchBaseline(rec, path, exactCapture(here)) {
		t.Errorf("this Go version's baseline failed the same counts: %q", rec.errs)
	}
}
