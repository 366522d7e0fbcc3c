package samplercheck

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJudge: shares worked out by hand; a group sampled 10 points above
// its measured share of 3000 samples is misattributed, 1 point is not.
func TestJudge(t *testing.T) {
	ref := map[string]time.Duration{"a": 500, "b": 300, "c": 200}
	r := Judge(ref, map[string]int64{"a": 1530, "b": 870, "c": 600, "": 999})
	if r.Samples != 3000 {
		t.Fatalf("samples %d, want 3000 (the ungrouped ones left out)", r.Samples)
	}
	if r.Misattributes() {
		t.Errorf("1 point off misattributes: %s", r)
	}
	if r.Groups[0].Name != "a" || math.Abs(r.Groups[0].Ref-0.5) > 1e-12 || math.Abs(r.Groups[0].Sampled-0.51) > 1e-12 {
		t.Errorf("group a: %+v, want ref 0.5 sampled 0.51", r.Groups[0])
	}
	r = Judge(ref, map[string]int64{"a": 1200, "b": 1200, "c": 600})
	if !r.Misattributes() || r.Worst != "a" && r.Worst != "b" || math.Abs(math.Abs(r.Err)-10) > 1e-9 {
		t.Errorf("10 points off: %s, want a or b misattributed by 10 points", r)
	}
	// Bound: 3 points plus four standard errors of p=0.25 at 3000 samples.
	if got, want := Bound(0.25, 3000), 3+400*math.Sqrt(0.25*0.75/3000); math.Abs(got-want) > 1e-12 {
		t.Errorf("Bound = %v, want %v", got, want)
	}
}

// tally is a probe's counts: alu and callsleaf measured equal, sampled
// alu:callsleaf as given.
func tally(when time.Time, alu, leaf int64) *Tally {
	return &Tally{Period: time.Millisecond, When: when,
		Ref:     map[string]time.Duration{"alu": time.Second, "callsleaf": time.Second},
		Samples: map[string]int64{"alu": alu, "callsleaf": leaf, "": 7}}
}

// fakeProbes makes probeFn return tallies of the given split and counts the
// probes and samples asked for.
func fakeProbes(t *testing.T, alu float64) (calls *int, asked *int) {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	old := probeFn
	mu.Lock()
	memo = map[time.Duration][]*Tally{}
	mu.Unlock()
	t.Cleanup(func() {
		probeFn = old
		mu.Lock()
		memo = map[time.Duration][]*Tally{}
		mu.Unlock()
	})
	calls, asked = new(int), new(int)
	probeFn = func(period time.Duration, n int) (*Tally, error) {
		*calls++
		*asked += n
		a := int64(math.Round(alu * float64(n)))
		return tally(time.Now(), a, int64(n)-a), nil
	}
	return calls, asked
}

// TestPool: tallies add up before they are judged.
func TestPool(t *testing.T) {
	now := time.Now()
	r := Pool([]*Tally{tally(now, 600, 400), tally(now.Add(-time.Second), 400, 600)})
	if r.Samples != 2000 || r.Probes != 2 || !r.When.Equal(now) || r.Misattributes() || math.Abs(r.Err) > 1e-9 {
		t.Errorf("pooled 60/40 and 40/60: %s, want 2000 samples of 2 probes agreeing exactly", r)
	}
	if Pool(nil) != nil {
		t.Error("Pool of nothing is not nil")
	}
}

// TestRecentProbesAgain: Recent uses the probes of the last Window (kept in
// the cache file for the next process) and probes again for the samples
// missing; a probe older than Window does not stand for the sampler now.
func TestRecentProbesAgain(t *testing.T) {
	if raceEnabled {
		t.Skip("no check under the race detector (TestNoCheckUnderRace)")
	}
	calls, asked := fakeProbes(t, 0.5)
	r, err := Recent(time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if *calls != 1 || *asked != CheckSamples || r.Samples != CheckSamples || r.Misattributes() {
		t.Fatalf("first Recent: %d probes of %d samples, %s", *calls, *asked, r)
	}
	path := cachePath(bootID(), time.Millisecond)
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the probe was not kept: %v", err)
	}
	if filepath.Dir(filepath.Dir(path)) != os.Getenv("XDG_CACHE_HOME") {
		t.Errorf("kept at %s, not under the user's cache directory", path)
	}
	// Another process (memory cleared) reads the file and probes nothing.
	mu.Lock()
	memo = map[time.Duration][]*Tally{}
	mu.Unlock()
	if r, err := Recent(time.Millisecond); err != nil || *calls != 1 || r.Samples != CheckSamples {
		t.Errorf("second Recent: %v, %d probes in all, %v", err, *calls, r)
	}
	// Probes older than Window are dropped: the sampler is probed again.
	mu.Lock()
	for _, tl := range memo[time.Millisecond] {
		tl.When = tl.When.Add(-Window - time.Second)
	}
	store(time.Millisecond, memo[time.Millisecond])
	mu.Unlock()
	if _, err := Recent(time.Millisecond); err != nil || *calls != 2 {
		t.Errorf("Recent after the window: %v, %d probes in all, want 2", err, *calls)
	}
}

// TestAgainCatchesAChange: the sampler agrees when Recent is asked, then
// goes wrong (alu sampled 70% against 50% measured); the next Again sees
// it in its probe alone, and in the pool once the wrong probes hold enough
// of it. A right probe after that is not enough to trust the pool again.
func TestAgainCatchesAChange(t *testing.T) {
	if raceEnabled {
		t.Skip("no check under the race detector (TestNoCheckUnderRace)")
	}
	fakeProbes(t, 0.5)
	if r, err := Recent(time.Millisecond); err != nil || r.Misattributes() {
		t.Fatalf("Recent of a right sampler: %v, %v", r, err)
	}
	probeFn = func(period time.Duration, n int) (*Tally, error) {
		a := int64(0.7 * float64(n))
		return tally(time.Now(), a, int64(n)-a), nil
	}
	fresh, pooled, err := Again(time.Millisecond, 400)
	if err != nil {
		t.Fatal(err)
	}
	if w, wrong := Wrong(fresh, pooled); !wrong || w != fresh || pooled.Samples != CheckSamples+400 {
		t.Errorf("Again after the change: fresh %s; pooled %s: want the probe alone wrong", fresh, pooled)
	}
	if r, err := Recent(time.Millisecond); err != nil || !r.Misattributes() || r.Probes != 1 {
		t.Errorf("Recent after a wrong probe: %v, %v: want that probe, wrong", r, err)
	}
	for range 4 {
		_, pooled, _ = Again(time.Millisecond, 400)
	}
	if !pooled.Misattributes() || pooled.Samples < CheckSamples {
		t.Errorf("five wrong probes pooled: %s, want wrong", pooled)
	}
	probeFn = func(period time.Duration, n int) (*Tally, error) {
		return tally(time.Now(), int64(n/2), int64(n-n/2)), nil
	}
	fresh, pooled, _ = Again(time.Millisecond, 400)
	if _, wrong := Wrong(fresh, pooled); !wrong || fresh.Misattributes() {
		t.Errorf("one right probe after five wrong: fresh %s, pooled %s: want the pool still wrong", fresh, pooled)
	}
	if !strings.Contains(pooled.String(), "disagree") || !strings.Contains(pooled.String(), "of 5 probes") {
		t.Errorf("the pool's line: %s", pooled)
	}
}

// TestCheckAgreesHere measures the machine now: a probe of CheckSamples
// samples whose groups are all measured and sampled. Where the samples
// disagree with the thread's CPU clock the test is skipped with the
// figures: hotbudget does not use the perf sampler on this machine while
// they do (perfassert's TestSamplerMisattributesFallsBack and
// TestSamplerWrongDuringCaptureRedone test that), so there is nothing of
// the product's to judge; a pass means the samples agree now.
func TestCheckAgreesHere(t *testing.T) {
	r, err := Check(500 * time.Microsecond)
	if errors.Is(err, ErrNotChecked) {
		t.Skipf("no check here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Groups) != 3 || r.Samples < CheckSamples/3 {
		t.Fatalf("%d groups, %d samples: want 3 groups and about %d samples", len(r.Groups), r.Samples, CheckSamples)
	}
	for _, g := range r.Groups {
		if g.Ref < 0.1 || g.Sampled == 0 {
			t.Errorf("%s: measured %.3f, sampled %.3f: every group should hold a tenth or more and be sampled", g.Name, g.Ref, g.Sampled)
		}
	}
	if r.Misattributes() {
		t.Skipf("this machine's perf sampler is wrong now, and hotbudget uses runtime/pprof while it is: %s", r)
	}
	t.Log(r)
}

// TestNoCheckUnderRace: under the race detector no check is made (its
// instrumentation would fail every machine) and nothing is kept for the
// processes without it.
func TestNoCheckUnderRace(t *testing.T) {
	if !raceEnabled {
		t.Skip("for go test -race")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if _, err := Recent(time.Millisecond); !errors.Is(err, ErrRace) || !errors.Is(err, ErrNotChecked) {
		t.Fatalf("Recent under race: %v, want ErrRace", err)
	}
	if _, _, err := Again(time.Millisecond, 100); !errors.Is(err, ErrRace) {
		t.Fatalf("Again under race: %v, want ErrRace", err)
	}
	if left, _ := os.ReadDir(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "hotbudget")); len(left) > 0 {
		t.Errorf("a result was kept: %v", left)
	}
}
