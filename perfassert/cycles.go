// Estimated cycles (issue 45): the exact instrument with callgrind's cache
// simulation, which sees what instructions cannot, a hot loop touching more
// cache lines.

package perfassert

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/stats"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/internal/valgrind"
)

// Cycles makes Capture estimate the cycles fn takes, function by function:
// Instructions with callgrind's cache simulation, of a fixed cache geometry
// (that of a core of a typical CI runner, not the host's, so that every
// machine estimates the same), each access costed as a first-level hit (1
// cycle), a last-level hit (5) or a memory access (35). The capture's first
// sample type is "cycles/count"; the instructions and callgrind's cache
// events (dr, dw, i1mr, d1mr, d1mw, ilmr, dlmr, dlmw) follow as further
// sample types of the same profile (go tool pprof -sample_index=d1mr).
// MatchBaseline and NoRegression judge its cycles exactly, as they judge
// instructions, and show each changed function's instructions beside its
// cycles, so that a reader sees whether a change is work or memory; the
// baseline records the geometry and refuses a capture of another. The
// instruction limits (MaxSelfInstructions) bound its instructions.
//
// Choose it over Instructions when a change may make code slower without
// executing more instructions (a hot struct grows, a loop strides across
// cache lines); it takes longer to count. docs/instructions.md
// says how the geometry and the costs were chosen, and how much longer.
func Cycles() CaptureOption {
	return captureFunc(func(c *captureConfig) { c.exact, c.cycles = true, true })
}

// cache is the geometry callgrind simulates for a capture of plan: none
// when it counts instructions alone.
func (plan exactPlan) cache() *valgrind.Geometry {
	if !plan.cycles {
		return nil
	}
	g := valgrind.CIGeometry
	return &g
}

// estimate turns a child's capture p into estimated cycles when plan asks
// for them, and records in rec's Depends the geometry that callgrind's last
// dump in dir says it simulated (EstimateDump refuses another). It returns p unchanged otherwise.
func (plan exactPlan) estimate(p *profile.Profile, rec *meta.Record, dir string, note exactNote) (*profile.Profile, error) {
	if !plan.cycles {
		return p, nil
	}
	dump := filepath.Join(dir, fmt.Sprintf("callgrind.out.%d", note.last))
	q, err := valgrind.EstimateDump(p, dump, valgrind.CIGeometry)
	if err != nil {
		return nil, fmt.Errorf("perfassert: estimating cycles: %w", err)
	}
	if rec.Depends == nil {
		rec.Depends = map[string]string{}
	}
	rec.Depends[cacheDepends] = cacheRecord(valgrind.CIGeometry)
	return q, nil
}

// cacheDepends is the key of Depends under which a capture of estimated
// cycles records the caches simulated and the cost of each level.
const cacheDepends = "cache"

// cacheRecord is what a baseline of cycles records of geometry g: its
// caches and the cycles a hit of each level costs, both of which the
// estimate depends on.
func cacheRecord(g valgrind.Geometry) string {
	return fmt.Sprintf("%s; cycles L1 1 LL %d RAM %d", g, valgrind.CyclesLL, valgrind.CyclesRAM)
}

// cyclesMismatch says why a baseline recorded as br cannot judge a capture
// recorded as cr because one estimates cycles and the other does not, ""
// otherwise (another geometry is a difference of Depends, said by
// exactMismatch).
func cyclesMismatch(br, cr meta.Record) string {
	b, c := br.Depends[cacheDepends] != "", cr.Depends[cacheDepends] != ""
	switch {
	case b && !c:
		return "holds estimated cycles (perfassert.Cycles), and the current capture counts instructions (perfassert.Instructions)"
	case c && !b && br.Instrument != "":
		return "holds counted instructions (perfassert.Instructions), and the current capture estimates cycles (perfassert.Cycles)"
	}
	return ""
}

// perIteration is what an exact capture p counts per iteration of runs:
// "2,776,258 instructions", or "3,104,112 estimated cycles (2,776,258
// instructions)".
func perIteration(p *profile.Profile, runs int) string {
	sums := make([]float64, len(p.SampleType))
	for _, s := range p.Sample {
		for i := range min(len(s.Value), len(sums)) {
			sums[i] += float64(s.Value[i])
		}
	}
	per := func(i int) string { return textfmt.Count(math.Round(sums[i] / float64(max(runs, 1)))) }
	if len(sums) == 0 {
		return "0 instructions"
	}
	if p.SampleType[0].Type != valgrind.CyclesType || len(sums) < 2 {
		return per(0) + " instructions"
	}
	return per(0) + " estimated cycles (" + per(1) + " instructions)"
}

// cyclesBeside adds to text, the report of a comparison of estimated
// cycles, each changed function's instructions on both sides, so that a
// reader sees whether the change is work (instructions moved with cycles)
// or memory (cycles moved alone). Reports of instructions are returned as
// they are.
func cyclesBeside(rep *diff.CountReport, text string, base, current *profile.Profile) string {
	if rep == nil || rep.Event != valgrind.CyclesType {
		return text
	}
	bi, bt := instructionsPerIteration(base)
	ci, ct := instructionsPerIteration(current)
	if len(bt) == 0 || len(ct) == 0 {
		return text
	}
	var b strings.Builder
	b.WriteString(text)
	fmt.Fprintf(&b, "\n  instructions beside: %s -> %s (%s) in all", textfmt.Count(math.Round(stats.Median(bt))), textfmt.Count(math.Round(stats.Median(ct))), cyclesChange(stats.Median(bt), stats.Median(ct)))
	for _, row := range rep.Rows {
		mb, mh := stats.Median(bi[row.Name]), stats.Median(ci[row.Name])
		kind := "work: its instructions moved too"
		if math.Abs(mh-mb) <= 0.005*mb {
			kind = "memory: the same instructions, other cache misses"
		}
		fmt.Fprintf(&b, "\n  %-9s %s: %s -> %s instructions (%s); cycles %s -> %s: %s", row.Verdict, textfmt.Line(row.Name),
			textfmt.Count(math.Round(mb)), textfmt.Count(math.Round(mh)), cyclesChange(mb, mh),
			textfmt.Count(math.Round(stats.Median(row.Base))), textfmt.Count(math.Round(stats.Median(row.Head))), kind)
	}
	return b.String()
}

// cyclesChange is the change from a to b in percent.
func cyclesChange(a, b float64) string {
	if a == 0 {
		return "new"
	}
	return fmt.Sprintf("%+.2f%%", 100*(b-a)/a)
}

// instructionsPerIteration is each function's self instructions per
// iteration in each process of p, a profile of estimated cycles, and each
// process's whole count.
func instructionsPerIteration(p *profile.Profile) (byFunc map[string][]float64, totals []float64) {
	i := slices.IndexFunc(p.SampleType, func(st *profile.ValueType) bool { return st.Type == "instructions" })
	if i < 0 {
		return nil, nil
	}
	ps, err := splitProcesses(p)
	if err != nil {
		return nil, nil
	}
	byFunc = map[string][]float64{}
	for n, q := range ps {
		c := capturedOf(q)
		if c.facts.RecordErr != nil || !c.facts.HasRecord {
			return nil, nil
		}
		rec := c.rec
		var work, total float64
		for _, r := range rec.Runs {
			work += r.Work
		}
		if !(work > 0) {
			return nil, nil
		}
		for _, s := range q.Sample {
			if i >= len(s.Value) || len(s.Location) == 0 || len(s.Location[0].Line) == 0 || s.Location[0].Line[0].Function == nil {
				continue
			}
			name := s.Location[0].Line[0].Function.Name
			for len(byFunc[name]) <= n {
				byFunc[name] = append(byFunc[name], 0)
			}
			byFunc[name][n] += float64(s.Value[i]) / work
			total += float64(s.Value[i]) / work
		}
		totals = append(totals, total)
	}
	for name, v := range byFunc {
		for len(v) < len(ps) {
			v = append(v, 0)
		}
		byFunc[name] = v
	}
	return byFunc, totals
}
