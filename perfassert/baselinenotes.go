// The notes MatchBaseline adds to a comparison's result: a machine in another state, a busy machine, a thin baseline.

package perfassert

import (
	"fmt"
	"math"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// stateMargin is how much slower (or faster) per unit of work every
// current process must be than every process of the baseline for
// otherState to speak: a process's own state moved buger/jsonparser's time
// per iteration from 1.05-1.15ms to 1.4-2.1ms in a third of the processes
// of three recordings out of five, where making a 9% function 45% slower
// moved it 4%.
const stateMargin = 1.25

// otherState says, for a failed comparison of processes, when the current
// processes ran at a time per unit of work that no process of the
// baseline came near, by more than stateMargin, and the functions judged
// regressed account for less than half of the difference: the machine
// then ran them in another state than it recorded the baseline in (its
// load, how memory was placed), which moves shares as well as times.
func otherState(c compared, rep *diff.Report) string {
	if !c.byProcess || !rep.Failed() {
		return ""
	}
	perWork := func(r meta.Run) (float64, float64) { return float64(r.CPUNanos), r.Work }
	blo, bhi := processRange(c.base, perWork)
	hlo, hhi := processRange(c.head, perWork)
	unit := string(recordOf(c.base[0]).WorkUnit)
	if blo <= 0 || hlo <= 0 || unit == "" {
		return ""
	}
	var moved float64
	var than string
	switch {
	case hlo > stateMargin*bhi:
		moved, than = hlo/bhi-1, "beyond the slowest"
	case hhi < blo/stateMargin:
		moved, than = hhi/blo-1, "below the fastest"
	default:
		return ""
	}
	var explained float64
	for _, r := range rep.Regressions() {
		explained += r.Delta
	}
	if math.Abs(explained) >= math.Abs(moved)/2 {
		return ""
	}
	d := textfmt.Nanos
	what, cur, pronoun := currentProcesses(len(c.head)), d(hlo), "it"
	if len(c.head) > 1 {
		cur, pronoun = d(hlo)+"-"+d(hhi), "them"
	}
	nb := c.baseProcesses
	return fmt.Sprintf("the current %s took %s of CPU time per %s, %+.0f%% %s of the baseline's %d processes (%s-%s), and the functions judged regressed account for about %+.0f%%: the machine ran %s in another state than the one it recorded the baseline in (its load, how memory was placed), which moves functions' shares too; if the code did not change, run the test again, and if this persists, record the baseline again on this machine (%s=1)",
		what, cur, unit, 100*moved, than, nb, d(blo), d(bhi), 100*explained, pronoun, UpdateEnv)
}

// busyMargin is how much less of its wall time as CPU every current
// process must have had than every process of the baseline for
// busyMachine to speak. Measured on the 2-core machine: buger/jsonparser's
// golden test used 103-104% of its wall time as CPU alone and 60-62%
// beside two busy loops; Masterminds/semver's baseline processes 117-120%
// (the collector's workers on the other core). The example's golden test
// failed once beside the other packages' tests (one function +77% in all
// three processes), its capture at 872ms of CPU in 1.51s.
const busyMargin = 0.75

// busyMachine says, for a failed comparison, when the current processes
// ran on a busy machine and the baseline's did not: each got less than
// busyMargin of the CPU time (over wall time) of the least the baseline's
// processes got. Other work on the machine shares its caches, memory
// bandwidth and cores, and moves functions' shares with it.
func busyMachine(c compared, rep *diff.Report) string {
	if !rep.Failed() {
		return ""
	}
	cpuOverWall := func(r meta.Run) (float64, float64) { return float64(r.CPUNanos), float64(r.WallNanos) }
	blo, bhi := processRange(c.base, cpuOverWall)
	hlo, hhi := processRange(c.head, cpuOverWall)
	if !(blo > 0 && hlo > 0) || hhi >= busyMargin*blo {
		return ""
	}
	pct := func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }
	cur := pct(hhi)
	if hlo < hhi {
		cur = pct(hlo) + "-" + pct(hhi)
	}
	return fmt.Sprintf("the current %s used %s of the wall time as CPU time, the baseline's %s-%s: the machine was busy with other work (other packages' tests beside this one?), which shares its caches and cores and moves functions' shares; if the code did not change, run the test again on a quiet machine (go test -p 1 runs one package at a time)",
		currentProcesses(len(c.head)), cur, pct(blo), pct(bhi))
}

// processRange is the least and the greatest, over the processes the
// records of xs number, of one quantity of their runs summed over another
// (ratio gives a run's two); 0, 0 when some run lacks either.
func processRange(xs []*analysis.Index, ratio func(meta.Run) (num, den float64)) (lo, hi float64) {
	lo = math.Inf(1)
	for _, x := range xs {
		num, den := map[int]float64{}, map[int]float64{}
		for _, run := range recordOf(x).Runs {
			n, d := ratio(run)
			if !(n > 0 && d > 0) {
				return 0, 0
			}
			num[run.Process] += n
			den[run.Process] += d
		}
		for p, d := range den {
			lo, hi = math.Min(lo, num[p]/d), math.Max(hi, num[p]/d)
		}
	}
	if hi == 0 {
		return 0, 0
	}
	return lo, hi
}

// currentProcesses names the current side's n processes in a note:
// "process" or "3 processes".
func currentProcesses(n int) string {
	if n == 1 {
		return "process"
	}
	return fmt.Sprintf("%d processes", n)
}

// thinBaseline says when a baseline is too thin for the comparison: the
// heaviest function judged could not be seen to slow down by the minimum
// change (Settings.MinRelative) with 80% probability, and the baseline has
// fewer samples or runs than the capture it is compared with, so that
// recording it longer would help. It names the settings that fix it.
func thinBaseline(path string, rep *diff.Report) string {
	var top *diff.Row
	for i := range rep.Rows {
		r := &rep.Rows[i]
		if r.MinDetectable <= 0 || r.Verdict == diff.New || r.Verdict == diff.Gone {
			continue
		}
		if top == nil || r.Base.Metric > top.Base.Metric {
			top = r
		}
	}
	if top == nil || top.MinDetectable <= rep.Settings.MinRelative {
		return ""
	}
	nb, nc := rep.Base.Samples, rep.Head.Samples
	if nb >= nc && rep.Base.Runs >= rep.Head.Runs {
		return "" // the capture is as thin: more baseline would not help much
	}
	units := "runs"
	if rep.Base.Processes {
		units = "processes"
	}
	return fmt.Sprintf("baseline %s is thin (%d samples in %d %s; the capture: %d in %d): the heaviest function judged, %s, would have to slow down by %.0f%% to be detected (80%% chance), the minimum change being %.0f%%; record it with more samples: %s=1 with Capture options perfassert.MinSamples(%d) and perfassert.MaxDuration(...) long enough for them",
		path, nb, rep.Base.Runs, units, nc, rep.Head.Runs, top.Name, 100*top.MinDetectable, 100*rep.Settings.MinRelative, UpdateEnv, max(4*nc, 2*nb))
}
