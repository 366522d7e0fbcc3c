package samplercheck

import (
	"errors"
	"math"
	"os"
	"path/filepath"
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

// TestCheckAgreesHere measures the machine: either the samples agree with
// the thread's CPU clock within Bound, or the check says they do not. What
// it asserts is that a check is made, that its groups are all sampled, and
// that Cached keeps the result for the next process.
func TestCheckAgreesHere(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	r, err := Cached(500 * time.Microsecond)
	if errors.Is(err, ErrNotChecked) {
		t.Skipf("no check here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	if len(r.Groups) != 3 || r.Samples < 1000 {
		t.Fatalf("%d groups, %d samples: want 3 groups and about %d samples", len(r.Groups), r.Samples, targetSamples)
	}
	for _, g := range r.Groups {
		if g.Ref < 0.1 || g.Sampled == 0 {
			t.Errorf("%s: measured %.3f, sampled %.3f: every group should hold a tenth or more and be sampled", g.Name, g.Ref, g.Sampled)
		}
	}
	path := cachePath(bootID(), 500*time.Microsecond)
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the result was not kept: %v", err)
	}
	if filepath.Dir(filepath.Dir(path)) != os.Getenv("XDG_CACHE_HOME") {
		t.Errorf("kept at %s, not under the user's cache directory", path)
	}
}

// TestNoCheckUnderRace: under the race detector no check is made (its
// instrumentation would fail every machine) and nothing is kept for the
// processes without it.
func TestNoCheckUnderRace(t *testing.T) {
	if !raceEnabled {
		t.Skip("for go test -race")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if _, err := Cached(time.Millisecond); !errors.Is(err, ErrRace) || !errors.Is(err, ErrNotChecked) {
		t.Fatalf("Cached under race: %v, want ErrRace", err)
	}
	if left, _ := os.ReadDir(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "hotbudget")); len(left) > 0 {
		t.Errorf("a result was kept: %v", left)
	}
}
