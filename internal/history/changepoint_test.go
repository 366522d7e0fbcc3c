package history

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// series draws n points of noise (standard normal; with outliers, one
// point in ten is 3 to 6 standard deviations high, as a run on a busy
// machine is) around 100, shifted by delta standard deviations from
// index at on (at < 0: flat).
func series(rng *rand.Rand, n, at int, delta float64, outliers bool) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 100 + rng.NormFloat64()
		if outliers && rng.IntN(10) == 0 {
			x[i] += 3 + 3*rng.Float64()
		}
		if at >= 0 && i >= at {
			x[i] += delta
		}
	}
	return x
}

// rates finds change points in trials series and returns the share of
// series where the change at was found within one commit, and the share
// with a change point more than three commits from it (a false alarm;
// any change point of a flat series, at < 0).
func rates(e EDivisive, trials, n, at int, delta float64, outliers bool, seed uint64) (found, false_ float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	hit, alarm := 0, 0
	for range trials {
		got := false
		wrong := false
		for _, cp := range e.Find(series(rng, n, at, delta, outliers)) {
			off := math.Abs(float64(cp.Index - at))
			switch {
			case at >= 0 && off <= 1:
				got = true
			case at < 0 || off > 3:
				wrong = true
			}
		}
		if got {
			hit++
		}
		if wrong {
			alarm++
		}
	}
	return float64(hit) / float64(trials), float64(alarm) / float64(trials)
}

// TestEDivisivePowerAndFalseAlarms: on 30 commits with a step in the
// middle, E-divisive finds a step of 2 standard deviations nearly always
// and flags a flat series about as often as its significance says.
// HOTBUDGET_HISTORY_TABLE=1 prints the table of docs/history.md (200
// series a cell).
func TestEDivisivePowerAndFalseAlarms(t *testing.T) {
	e := EDivisive{Permutations: 99, PValue: 0.05, MinSize: 3, Seed: 1}
	trials := 40
	if os.Getenv("HOTBUDGET_HISTORY_TABLE") != "" {
		trials, e.Permutations = 200, 199
		for _, outliers := range []bool{false, true} {
			for _, n := range []int{20, 30, 60} {
				row := fmt.Sprintf("n=%d outliers=%v:", n, outliers)
				for _, d := range []float64{0, 0.5, 1, 1.5, 2, 3} {
					at := n / 2
					if d == 0 {
						at = -1
					}
					f, a := rates(e, trials, n, at, d, outliers, 11)
					row += fmt.Sprintf("  d=%.1f found %.0f%% false %.0f%%", d, 100*f, 100*a)
				}
				t.Log(row)
			}
		}
		return
	}
	_, flat := rates(e, trials, 30, -1, 0, false, 3)
	if flat > 0.15 {
		t.Errorf("flat series: %.0f%% with a change point, want about 5%%", 100*flat)
	}
	found, alarms := rates(e, trials, 30, 15, 2, false, 4)
	if found < 0.85 {
		t.Errorf("a step of 2 sd: found in %.0f%%, want at least 85%%", 100*found)
	}
	if alarms > 0.2 {
		t.Errorf("a step of 2 sd: %.0f%% with a change point elsewhere", 100*alarms)
	}
	_, flatOut := rates(e, trials, 30, -1, 0, true, 5)
	if flatOut > 0.15 {
		t.Errorf("flat series with outliers: %.0f%% with a change point", 100*flatOut)
	}
}

// TestEDivisiveTwoSteps finds both steps of a series that rises then
// falls back, with each side's median, and is the same on every call.
func TestEDivisiveTwoSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := series(rng, 45, -1, 0, false)
	for i := 15; i < 30; i++ {
		x[i] += 4
	}
	cps := DefaultEDivisive.Find(x)
	if len(cps) != 2 || cps[0].Index != 15 || cps[1].Index != 30 {
		t.Fatalf("change points %+v, want at 15 and 30", cps)
	}
	if c := cps[0]; c.After-c.Before < 3 || c.After-c.Before > 5 || c.P > 0.05 {
		t.Errorf("first change %+v: want about +4, significant", c)
	}
	if c := cps[1]; c.Before-c.After < 3 {
		t.Errorf("second change %+v: want about -4", c)
	}
	again := DefaultEDivisive.Find(x)
	if fmt.Sprint(again) != fmt.Sprint(cps) {
		t.Errorf("not repeatable: %+v then %+v", cps, again)
	}
	if got := DefaultEDivisive.Find(x[:5]); got != nil {
		t.Errorf("5 points: %+v, want none (segments of 3)", got)
	}
}

// TestBestCutByHand checks the energy statistic against its definition
// on a small series.
func TestBestCutByHand(t *testing.T) {
	x := []float64{1, 2, 1, 9, 8, 9}
	q, at := bestCut(x, 2)
	if at != 3 {
		t.Fatalf("cut at %d, want 3", at)
	}
	// Between: the 9 pairs across, |1-9|+|1-8|+... ; within left: |1-2|+|1-1|+|2-1| = 2;
	// within right: |9-8|+|9-9|+|8-9| = 2.
	between := 0.0
	for _, a := range x[:3] {
		for _, b := range x[3:] {
			between += math.Abs(a - b)
		}
	}
	want := 3.0 * 3 / 6 * (2/9.0*between - 2/6.0*2 - 2/6.0*2)
	if math.Abs(q-want) > 1e-9 {
		t.Errorf("Q = %v, want %v", q, want)
	}
}

func TestSteps(t *testing.T) {
	nan := math.NaN()
	x := []float64{1000, 1003, nan, 1003, 1020, 1020, 1000}
	got := Steps(x, MeasureInstr.Tolerance)
	if len(got) != 2 || got[0].Index != 4 || got[0].Before != 1003 || got[1].Index != 6 {
		t.Errorf("steps %+v, want at 4 (1003 -> 1020) and 6", got)
	}
	// Allocations: half an object; bytes: 8 bytes.
	if got := Steps([]float64{3, 3.4, 4}, MeasureAllocs.Tolerance); len(got) != 1 || got[0].Index != 2 {
		t.Errorf("allocs steps %+v, want one at 2", got)
	}
	if got := Steps([]float64{64, 72, 96}, MeasureBytes.Tolerance); len(got) != 1 || got[0].Index != 2 {
		t.Errorf("bytes steps %+v, want one at 2", got)
	}
}
