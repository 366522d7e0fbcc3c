package perfassert_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/limits"
	"github.com/hotbudget/hotbudget/loaders"
	"github.com/hotbudget/hotbudget/perfassert"
)

// Two hand-made sides (1 ms per count): between them main.a's share goes
// from 50% to 80% over 1000 samples, far beyond sampling noise, and main.b's
// falls from 50% to 20%.
const (
	baseFolded = "main;main.a 500\nmain;main.b 500\n"
	headFolded = "main;main.a 800\nmain;main.b 200\n"
)

func TestNoRegression(t *testing.T) {
	base, head := load(t, baseFolded), load(t, headFolded)
	t.Run("A/A passes", func(t *testing.T) {
		ft := &fakeT{}
		if !perfassert.NoRegression(ft, base, load(t, baseFolded)) {
			t.Fatalf("same profile regressed:\n%s", ft.text())
		}
	})
	t.Run("an improvement passes", func(t *testing.T) {
		// In absolute time: main.a gets faster, main.b stays. (In shares,
		// main.b's would grow.)
		ft := &fakeT{}
		faster := load(t, "main;main.a 500\nmain;main.b 200\n")
		slower := load(t, "main;main.a 800\nmain;main.b 200\n")
		if !perfassert.NoRegression(ft, slower, faster, diff.WithMode(diff.Absolute)) {
			t.Fatalf("improvement reported:\n%s", ft.text())
		}
	})
	t.Run("A/B names the function and the sides", func(t *testing.T) {
		ft := &fakeT{}
		if perfassert.NoRegression(ft, base, head) {
			t.Fatal("regression passed")
		}
		text := ft.text()
		for _, want := range []string{"perfassert.NoRegression: 1 of 2 functions judged regressed (base = baseline, head = current):\n", "main.a"} {
			if !strings.Contains(text, want) {
				t.Errorf("failure text lacks %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "main.b") {
			t.Errorf("failure text lists the improved main.b:\n%s", text)
		}
	})
	t.Run("runs", func(t *testing.T) {
		// Five runs a side, each a little different: the fewest with which
		// Mann-Whitney U can reach p < 0.05.
		var bs, hs []*profile.Profile
		for i := range 5 {
			bs = append(bs, load(t, fmt.Sprintf("main;main.a %d\nmain;main.b %d\n", 500+i, 500-i)))
			hs = append(hs, load(t, fmt.Sprintf("main;main.a %d\nmain;main.b %d\n", 800-i, 200+i)))
		}
		ft := &fakeT{}
		if perfassert.NoRegressionRuns(ft, bs, hs) {
			t.Fatal("regression passed")
		}
		if !strings.Contains(ft.text(), "(base = 5 baseline profiles, head = 5 current profiles)") || !strings.Contains(ft.text(), "main.a") {
			t.Errorf("failure text:\n%s", ft.text())
		}
	})
	t.Run("nothing to compare fails", func(t *testing.T) {
		ft := &fakeT{}
		if perfassert.NoRegressionRuns(ft, nil, []*profile.Profile{head}) {
			t.Fatal("passed with no base")
		}
		if !strings.Contains(ft.text(), "no profiles to compare (0 base, 1 current)") {
			t.Errorf("text: %s", ft.text())
		}
		ft = &fakeT{}
		if perfassert.NoRegression(ft, nil, head) || !strings.Contains(ft.text(), "nil profile") {
			t.Errorf("nil base: %s", ft.text())
		}
	})
	t.Run("invalid diff option is reported", func(t *testing.T) {
		ft := &fakeT{}
		if perfassert.NoRegression(ft, base, head, diff.WithAlpha(2)) {
			t.Fatal("passed")
		}
		if !strings.Contains(ft.text(), "alpha must be in (0,1)") {
			t.Errorf("text: %s", ft.text())
		}
	})
}

// TestNoRegressionPerOp compares captures per run of the captured function
// (Iterations), so that captures of different lengths compare: the time per
// run of spin triples and is flagged, the same work per run is not. The two
// captures of each comparison run at the same time (they share the
// profiler), so that a machine busy with other work slows both alike: time
// per run, unlike a share, moves with the machine's load.
func TestNoRegressionPerOp(t *testing.T) {
	testutil.Slow(t, "captures real profiles in pairs, up to four times")
	type result struct {
		p *profile.Profile
		n float64
	}
	capture := func(spinN int, out *result, wg *sync.WaitGroup) {
		defer wg.Done()
		p, err := perfassert.CaptureProfile(func() { spin(spinN); other(40_000) }, perfassert.MinSamples(60), perfassert.MaxDuration(3*time.Second))
		if err != nil {
			t.Error(err)
			return
		}
		n, ok := perfassert.Iterations(p)
		if !ok {
			t.Error("no iteration count")
		}
		*out = result{p, float64(n)}
	}
	pair := func(spinA, spinB int) (a, b result) {
		var wg sync.WaitGroup
		wg.Add(2)
		go capture(spinA, &a, &wg)
		go capture(spinB, &b, &wg)
		wg.Wait()
		if a.p == nil || b.p == nil {
			t.FailNow()
		}
		return a, b
	}
	// Each capture is one profile a side holding its runs; WithOps gives
	// the capture's iterations, which diff shares among the runs by the
	// work each records. (Dividing every run by the capture's whole count
	// made a capture of fewer, longer runs look slower per operation: the
	// A/A pair failed under load when the two captures split differently.)
	one := func(r result) []*profile.Profile { return []*profile.Profile{r.p} }
	// A statistical gate errs now and then by design (at most its
	// false-discovery rate): an A/A pair that fails is captured once more
	// before the test fails (twice in a row is a broken gate).
	for attempt := 1; ; attempt++ {
		a1, a2 := pair(40_000, 40_000)
		ft := &fakeT{}
		if perfassert.NoRegressionRuns(ft, one(a1), one(a2), diff.WithOps(a1.n, a2.n)) {
			break
		}
		if attempt == 2 {
			t.Fatalf("identical work per run regressed twice in a row:\n%s", ft.text())
		}
		t.Logf("the A/A pair failed once, as a statistical gate may; capturing again:\n%s", ft.text())
	}
	// other's work per run is the same on both sides: that it is not
	// flagged is an A/A statement again, false at the gate's rate (CI saw
	// other at +47% with p=0.027 from about 40 samples a side), so a pair
	// that flags it is captured once more too. Tripling spin must fail
	// every time: 26 runs a side detect +50% in spin.
	for attempt := 1; ; attempt++ {
		a, b := pair(40_000, 120_000)
		ft := &fakeT{}
		if perfassert.NoRegressionRuns(ft, one(a), one(b), diff.WithOps(a.n, b.n)) {
			t.Fatalf("tripling spin's work per run passed:\n%s", ft.text())
		}
		if !strings.Contains(ft.text(), spinName) {
			t.Fatalf("the failure does not name spin:\n%s", ft.text())
		}
		if !strings.Contains(ft.text(), "perfassert_test.other") {
			break
		}
		if attempt == 2 {
			t.Fatalf("other, whose work per run is unchanged, regressed twice in a row:\n%s", ft.text())
		}
		t.Logf("other was flagged once, as a statistical gate may; capturing again:\n%s", ft.text())
	}
}

var otherSink atomic.Uint64

//go:noinline
func other(n int) {
	x := otherSink.Load() + 7
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	otherSink.Store(x)
}

func TestNoBenchRegression(t *testing.T) {
	old := `goos: linux
goarch: amd64
pkg: example.com/m
BenchmarkParse-2   	 1000000	      1000 ns/op
BenchmarkParse-2   	 1000000	      1010 ns/op
BenchmarkParse-2   	 1000000	       990 ns/op
BenchmarkParse-2   	 1000000	      1005 ns/op
BenchmarkParse-2   	 1000000	       995 ns/op
`
	slow := strings.NewReplacer(" 1000 ns", " 1500 ns", " 1010 ns", " 1510 ns", "  990 ns", " 1490 ns", " 1005 ns", " 1505 ns", "  995 ns", " 1495 ns").Replace(old)
	ft := &fakeT{}
	if !perfassert.NoBenchRegression(ft, strings.NewReader(old), strings.NewReader(old)) {
		t.Errorf("A/A regressed:\n%s", ft.text())
	}
	ft = &fakeT{}
	if perfassert.NoBenchRegression(ft, strings.NewReader(old), strings.NewReader(slow)) {
		t.Fatal("50% slower passed")
	}
	if !strings.Contains(ft.text(), "perfassert.NoBenchRegression: 1 of 1 benchmark results regressed (base = old benchmark output, head = new):") || !strings.Contains(ft.text(), "Parse") {
		t.Errorf("failure text:\n%s", ft.text())
	}
	ft = &fakeT{}
	if perfassert.NoBenchRegression(ft, strings.NewReader(""), strings.NewReader("")) {
		t.Error("empty inputs passed")
	}
}

func TestMatchBaselineUpdateFlow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "testdata", "hand.pb.gz")
	p := load(t, handFolded)

	t.Setenv(perfassert.UpdateEnv, "")
	ft := &fakeT{name: "TestMatchBaselineUpdateFlow/first run"}
	if perfassert.MatchBaseline(ft, path, p) {
		t.Fatal("passed without a baseline")
	}
	want := "perfassert.MatchBaseline: no baseline at " + path + "; create it by running, in the module root:\n" +
		"    HOTBUDGET_UPDATE=1 go test -run '^TestMatchBaselineUpdateFlow$/^first run$' ./perfassert\n" +
		"or, for every baseline of the module:\n" +
		"    HOTBUDGET_UPDATE=1 go test ./..."
	if ft.text() != want {
		t.Errorf("missing baseline:\n got %q\nwant %q", ft.text(), want)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("baseline written without being asked: %v", err)
	}

	t.Setenv(perfassert.UpdateEnv, "1")
	ft = &fakeT{}
	if !perfassert.MatchBaseline(ft, path, p) {
		t.Fatalf("update failed: %s", ft.text())
	}
	if len(ft.logs) != 1 || ft.logs[0] != "perfassert.MatchBaseline: updated baseline "+path+" (100 samples)" {
		t.Errorf("logs = %q", ft.logs)
	}
	got, err := loaders.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := limits.Check(got, "main.busy", limits.Limit{Quantity: limits.TotalTime, Time: time.Second})
	if err != nil || time.Duration(r.Value) != 70*time.Millisecond || time.Duration(r.Total) != 100*time.Millisecond {
		t.Errorf("written baseline: %v %v", err, r)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the baseline (temporary files left?)", len(entries))
	}
	// Updating again in the same process (go test -count=2) keeps the
	// baseline and says so.
	ft = &fakeT{}
	if !perfassert.MatchBaseline(ft, path, load(t, headFolded)) {
		t.Fatal(ft.text())
	}
	if got, _ := loaders.Load(path); got == nil || len(got.Sample) == 2 {
		t.Errorf("baseline replaced by a second update in one process")
	}
	if len(ft.logs) != 1 || !strings.Contains(ft.logs[0], "was recorded by this test process already") {
		t.Errorf("the second update's logs = %q", ft.logs)
	}

	// The test flag works like the variable.
	t.Setenv(perfassert.UpdateEnv, "")
	if err := flag.Set("hotbudget.update", "true"); err != nil {
		t.Fatal(err)
	}
	defer flag.Set("hotbudget.update", "false")
	flagged := filepath.Join(dir, "flagged.pb.gz")
	if !perfassert.MatchBaseline(ft, flagged, p) {
		t.Fatal(ft.text())
	}
	if _, err := os.Stat(flagged); err != nil {
		t.Errorf("-hotbudget.update did not write: %v", err)
	}
}

func TestMatchBaselineFlagIsRegistered(t *testing.T) {
	f := flag.Lookup("hotbudget.update")
	if f == nil || f.DefValue != "false" {
		t.Fatalf("flag -hotbudget.update: %+v", f)
	}
}

func TestWriteBaselineErrors(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := perfassert.WriteBaseline(filepath.Join(blocker, "base.pb.gz"), load(t, handFolded))
	if err == nil || !strings.Contains(err.Error(), "writing baseline "+filepath.Join(blocker, "base.pb.gz")) {
		t.Errorf("err = %v", err)
	}
	// A directory in the way of the rename: the temporary file is removed.
	target := filepath.Join(dir, "dir.pb.gz")
	if err := os.MkdirAll(filepath.Join(target, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := perfassert.WriteBaseline(target, load(t, handFolded)); err == nil {
		t.Error("rename over a non-empty directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("%d entries left in the directory, want 2 (temporary file not removed)", len(entries))
	}
}

// TestMatchBaselineCommitted compares with the baseline checked in under
// testdata/perfassert (written by this test's update flow from handFolded).
func TestMatchBaselineCommitted(t *testing.T) {
	const path = "../testdata/perfassert/hand.pb.gz"
	perfassert.MatchBaseline(t, path, load(t, handFolded))
	if os.Getenv(perfassert.UpdateEnv) != "" || flag.Lookup("hotbudget.update").Value.String() == "true" {
		return // the baseline was just written
	}
	ft := &fakeT{}
	regressed := load(t, handFolded+"main.main;main.run;main.busy 200\n")
	if perfassert.MatchBaseline(ft, path, regressed) {
		t.Fatal("a regression against the baseline passed")
	}
	if !strings.Contains(ft.text(), "(base = "+path+", head = current):") || !strings.Contains(ft.text(), "main.busy") {
		t.Errorf("failure text:\n%s", ft.text())
	}
}

// withBuild marks p as captured in a build with or without the race
// detector, as Capture does.
func withBuild(p *profile.Profile, race bool) *profile.Profile {
	b := "go1.26 linux/amd64"
	if race {
		b += " race"
	}
	p.Comments = append(p.Comments, "hotbudget build: "+b)
	return p
}

// TestMatchBaselineRaceBuild: a capture made under -race is compared with,
// and written to, a baseline of its own, and the command that creates it
// says -race; a plain capture and a loaded profile use path as given.
func TestMatchBaselineRaceBuild(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "parse.pb.gz")
	racePath := filepath.Join(dir, "parse.race.pb.gz")

	t.Setenv(perfassert.UpdateEnv, "")
	ft := &fakeT{name: "TestParse"}
	if perfassert.MatchBaseline(ft, path, withBuild(load(t, handFolded), true)) {
		t.Fatal("passed without a baseline")
	}
	want := "perfassert.MatchBaseline: no baseline at " + racePath + "; create it by running, in the module root:\n" +
		"    HOTBUDGET_UPDATE=1 go test -race -run '^TestParse$' ./perfassert\n" +
		"or, for every baseline of the module:\n" +
		"    HOTBUDGET_UPDATE=1 go test -race ./..."
	if ft.text() != want {
		t.Errorf("missing race baseline:\n got %q\nwant %q", ft.text(), want)
	}

	t.Setenv(perfassert.UpdateEnv, "1")
	if ft := (&fakeT{}); !perfassert.MatchBaseline(ft, path, withBuild(load(t, handFolded), true)) {
		t.Fatal(ft.text())
	}
	if _, err := os.Stat(racePath); err != nil {
		t.Fatalf("race baseline not written: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a race capture wrote the plain baseline: %v", err)
	}
	if ft := (&fakeT{}); !perfassert.MatchBaseline(ft, path, withBuild(load(t, handFolded), false)) {
		t.Fatal(ft.text())
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("plain baseline not written: %v", err)
	}

	// Each build is compared with its own baseline: the race baseline holds
	// busy at 60%, and a race capture with busy at 80% regresses against
	// it, while a loaded profile (no build recorded) reads path itself.
	t.Setenv(perfassert.UpdateEnv, "")
	if err := perfassert.WriteBaseline(path, load(t, "main.main;main.busy 80\nmain.main;main.other 20\n")); err != nil {
		t.Fatal(err)
	}
	slow := "main.main;main.busy 80\nmain.main;main.other 20\n"
	ft = &fakeT{}
	if perfassert.MatchBaseline(ft, path, withBuild(load(t, strings.Repeat(slow, 3)), true)) {
		t.Error("a race capture was compared with the plain baseline")
	}
	if !strings.Contains(ft.text(), "base = "+racePath) {
		t.Errorf("failure does not name the race baseline:\n%s", ft.text())
	}
	if ft := (&fakeT{}); !perfassert.MatchBaseline(ft, path, load(t, slow)) {
		t.Errorf("a loaded profile was not compared with path:\n%s", ft.text())
	}
	if perfassert.MatchBaseline(&fakeT{}, racePath, load(t, slow)) {
		t.Error("the loaded profile passes against the race baseline too: the case above proves nothing")
	}
}

// TestBuildsAreNotCompared: comparing a race capture with a plain one is an
// error, not a verdict; profiles that do not record their build compare.
func TestBuildsAreNotCompared(t *testing.T) {
	plain := withBuild(load(t, handFolded), false)
	race := withBuild(load(t, handFolded), true)
	_, err := perfassert.CheckRegression([]*profile.Profile{plain}, []*profile.Profile{race})
	if err == nil || !strings.Contains(err.Error(), "base was captured without the race detector and current with it") {
		t.Errorf("err = %v", err)
	}
	if _, err := perfassert.CheckRegression([]*profile.Profile{race}, []*profile.Profile{load(t, handFolded)}); err != nil {
		t.Errorf("unknown build: %v", err)
	}
	if _, err := perfassert.CheckRegression([]*profile.Profile{race}, []*profile.Profile{race}); err != nil {
		t.Errorf("same build: %v", err)
	}
}

// TestCheckRegressionNilProfile: a nil profile among either side's is an
// error naming it, as diff.Compare names it.
func TestCheckRegressionNilProfile(t *testing.T) {
	p := load(t, handFolded)
	if _, err := perfassert.CheckRegression([]*profile.Profile{p}, []*profile.Profile{p, nil}); err == nil || err.Error() != "diff: head profile 2 is nil" {
		t.Errorf("a nil head profile: %v", err)
	}
	if _, err := perfassert.CheckRegression([]*profile.Profile{nil}, []*profile.Profile{p}); err == nil || err.Error() != "diff: base profile 1 is nil" {
		t.Errorf("a nil base profile: %v", err)
	}
}

// TestLegacyBaselines: baselines written before captures held runs (one
// unlabelled run, metadata in plain comments) still load, say what they
// are, and compare. MatchBaseline reads a copy of the committed baseline,
// with updating off, so that running the package's tests with
// HOTBUDGET_UPDATE=1 or -hotbudget.update neither overwrites the fixture
// nor skips the comparisons.
func TestLegacyBaselines(t *testing.T) {
	const fixture = "../testdata/perfassert/legacy-parse.pb.gz"
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "legacy-parse.pb.gz")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := loaders.Load(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if got := perfassert.ProfileName(p); got != "capture of TestParseMatchesBaseline" {
		t.Errorf("ProfileName = %q", got)
	}
	if n, ok := perfassert.Iterations(p); !ok || n <= 0 {
		t.Errorf("Iterations = %d, %v", n, ok)
	}
	runs, err := perfassert.SplitRuns(p)
	if err != nil || len(runs) != 1 || runs[0] != p {
		t.Fatalf("SplitRuns: %d runs, %v", len(runs), err)
	}
	t.Setenv(perfassert.UpdateEnv, "")
	update := flag.Lookup("hotbudget.update")
	if was := update.Value.String(); was != "false" {
		if err := update.Value.Set("false"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { update.Value.Set(was) })
	}
	if ft := (&fakeT{}); !perfassert.MatchBaseline(ft, path, p) {
		t.Errorf("the legacy baseline does not match itself:\n%s", ft.text())
	}
	// Tripling normalizeKey's samples fails, naming it.
	slow := p.Copy()
	for _, s := range slow.Sample {
		if leaf := s.Location[0].Line[0].Function.Name; strings.HasSuffix(leaf, "capture.normalizeKey") {
			s.Value = []int64{s.Value[0] * 3, s.Value[1] * 3}
		}
	}
	ft := &fakeT{}
	if perfassert.MatchBaseline(ft, path, slow) {
		t.Fatal("a tripled normalizeKey passed against the legacy baseline")
	}
	if !strings.Contains(ft.text(), "examples/capture.normalizeKey") {
		t.Errorf("failure text:\n%s", ft.text())
	}
	race, err := loaders.Load("../testdata/perfassert/legacy-parse.race.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := perfassert.CheckRegression([]*profile.Profile{p}, []*profile.Profile{race}); err == nil || !strings.Contains(err.Error(), "race detector") {
		t.Errorf("legacy plain against legacy race: %v", err)
	}
}

// runsProfile builds a profile of n labelled runs, as a capture writes
// them: run i holds the module's functions a and b and runtime.mallocgc
// with the counts (1 ms each) counts(i) gives, and 100 iterations.
func runsProfile(t *testing.T, n int, counts func(run int) (a, b, gc int64)) *profile.Profile {
	t.Helper()
	const root = "github.com/hotbudget/hotbudget/perfassert_test.root;"
	var ps []*profile.Profile
	rec := meta.Record{Name: "runs", Build: "go1.26 linux/amd64", WorkUnit: "iteration"}
	for i := range n {
		a, b, gc := counts(i)
		q := load(t, fmt.Sprintf("%[1]sgithub.com/hotbudget/hotbudget/perfassert_test.a %[2]d\n%[1]sgithub.com/hotbudget/hotbudget/perfassert_test.b %[3]d\n%[1]sruntime.mallocgc %[4]d\n", root, a, b, gc))
		label := fmt.Sprint(i + 1)
		for _, s := range q.Sample {
			s.Label = map[string][]string{meta.LabelRun: {label}}
		}
		ps = append(ps, q)
		rec.Runs = append(rec.Runs, meta.Run{Label: label, Work: 100})
	}
	p, err := profile.Merge(ps)
	if err != nil {
		t.Fatal(err)
	}
	meta.Set(p, rec)
	return p
}

// TestBaselineHoldsRuns: MatchBaseline writes every run of a capture and
// compares runs against runs; by default only the module's functions are
// judged, and diff.WithOnly widens that.
func TestBaselineHoldsRuns(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.pb.gz")
	// Eight runs a side. main.a and main.b hold 300 samples each a run,
	// give or take a little; the runtime 100.
	base := runsProfile(t, 8, func(i int) (int64, int64, int64) { return int64(300 + i), int64(300 - i), 100 })
	t.Setenv(perfassert.UpdateEnv, "1")
	ft := &fakeT{}
	if !perfassert.MatchBaseline(ft, path, base) {
		t.Fatal(ft.text())
	}
	if len(ft.logs) != 1 || !strings.Contains(ft.logs[0], "(5600 samples in 8 runs)") {
		t.Errorf("update log %q", ft.logs)
	}
	t.Setenv(perfassert.UpdateEnv, "")
	written, err := loaders.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := perfassert.SplitRuns(written)
	if err != nil || len(runs) != 8 {
		t.Fatalf("the baseline holds %d runs (%v), want 8", len(runs), err)
	}
	if n, _ := perfassert.Iterations(runs[3]); n != 100 {
		t.Errorf("run 4 records %d iterations, want 100", n)
	}

	// Unchanged: passes, and -v says what was judged.
	same := runsProfile(t, 6, func(i int) (int64, int64, int64) { return int64(302 - i), int64(298 + i), 100 })
	ft = &fakeT{}
	if !perfassert.MatchBaseline(ft, path, same) {
		t.Fatalf("unchanged runs regressed:\n%s", ft.text())
	}
	if len(ft.logs) != 1 || !strings.Contains(ft.logs[0], "no regression (base = "+path+" (8 runs), head = current (6 runs)): 2 functions judged of 3 compared (the functions of github.com/hotbudget/hotbudget)") {
		t.Errorf("pass log %q", ft.logs)
	}

	// The runtime triples: no runtime function is judged by default, and
	// the whole program's time per iteration, 28% longer, is shown but not
	// judged against a baseline (recorded on another day or machine)
	// unless asked with diff.WithHeadline.
	gc := runsProfile(t, 6, func(i int) (int64, int64, int64) { return int64(300 + i), int64(300 - i), 300 + int64(i) })
	if ft := (&fakeT{}); !perfassert.MatchBaseline(ft, path, gc) {
		t.Errorf("a runtime function or the headline was judged by default:\n%s", ft.text())
	}
	ft = &fakeT{}
	if perfassert.MatchBaseline(ft, path, gc, diff.WithHeadline(true)) {
		t.Error("every iteration 28% slower passed with WithHeadline(true)")
	}
	if !strings.Contains(ft.text(), "time per iteration regressed") || strings.Contains(ft.text(), "regressed  runtime.mallocgc") {
		t.Errorf("failure text:\n%s", ft.text())
	}
	ft = &fakeT{}
	if perfassert.MatchBaseline(ft, path, gc, diff.WithOnly(nil)) {
		t.Error("diff.WithOnly(nil) did not widen the comparison to the runtime")
	}
	if !strings.Contains(ft.text(), "runtime.mallocgc") || !strings.Contains(ft.text(), "(base = "+path+" (8 runs), head = current (6 runs))") {
		t.Errorf("failure text:\n%s", ft.text())
	}

	// main.a 40% slower in every run: fails, naming it, compared run
	// against run.
	slow := runsProfile(t, 6, func(i int) (int64, int64, int64) { return int64(420 + i), int64(300 - i), 100 })
	ft = &fakeT{}
	if perfassert.MatchBaseline(ft, path, slow) {
		t.Fatal("a 40% slower main.a passed")
	}
	for _, want := range []string{"perfassert_test.a", "base: 8 runs", "head: 6 runs"} {
		if !strings.Contains(ft.text(), want) {
			t.Errorf("failure text lacks %q:\n%s", want, ft.text())
		}
	}
}
