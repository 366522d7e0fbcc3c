// record --instrument cycles (issue 45): counting with callgrind's cache
// simulation, every function's estimated cycles judged exactly, its
// instructions shown beside.

package gate

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/stats"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/internal/valgrind"
)

// CyclesUsage says what --instrument cycles does, in record's help.
const CyclesUsage = "instructions with callgrind's cache simulation (a CI runner's caches, fixed), judged exactly on estimated cycles, instructions beside: sees cache misses, slower to count"

// cache is the geometry callgrind simulates in record's counted runs: none
// without --cycles.
func (o Config) cache() *valgrind.Geometry {
	if !o.Cycles {
		return nil
	}
	g := valgrind.CIGeometry
	return &g
}

// estimate turns p, a counted run read from callgrind's dump, into
// estimated cycles with --cycles (instructions and cache events as further
// sample types), after checking the geometry the dump says it simulated;
// p as it is without.
func (o Config) estimate(p *profile.Profile, dump string) (*profile.Profile, error) {
	if !o.Cycles {
		return p, nil
	}
	return valgrind.EstimateDump(p, dump, valgrind.CIGeometry)
}

// writeCyclesBeside writes, after a benchmark's report of estimated
// cycles, each changed function's instructions per op on both sides, so
// that a reader sees whether its change is work or memory. Reports of
// instructions get nothing.
func writeCyclesBeside(b *bytes.Buffer, e exactResult) {
	rep := e.report
	if rep == nil || rep.Event != valgrind.CyclesType || len(rep.Rows) == 0 {
		return
	}
	bi, ci := instructionsPerOp(e.base), instructionsPerOp(e.head)
	for _, row := range rep.Rows {
		mb, mh := bi[row.Name], ci[row.Name]
		kind := "work: its instructions moved too"
		if math.Abs(mh-mb) <= 0.005*mb {
			kind = "memory: the same instructions, other cache misses"
		}
		change := "new"
		if mb > 0 {
			change = fmt.Sprintf("%+.2f%%", 100*(mh-mb)/mb)
		}
		fmt.Fprintf(b, "  %-9s %s: %s -> %s instructions (%s) beside its cycles: %s\n", row.Verdict, textfmt.Line(row.Name),
			textfmt.Count(math.Round(mb)), textfmt.Count(math.Round(mh)), change, kind)
	}
}

// instructionsPerOp is each function's self instructions per op in p, a
// difference of estimated cycles record judged (its processes' median).
func instructionsPerOp(p *profile.Profile) map[string]float64 {
	out := map[string]float64{}
	if p == nil {
		return out
	}
	i := slices.IndexFunc(p.SampleType, func(st *profile.ValueType) bool { return st.Type == "instructions" })
	ps, err := meta.SplitProcesses(p)
	if i < 0 || err != nil {
		return out
	}
	all := map[string][]float64{}
	for n, q := range ps {
		rec, ok, err := meta.Get(q)
		var work float64
		for _, r := range rec.Runs {
			work += r.Work
		}
		if err != nil || !ok || !(work > 0) {
			return out
		}
		for _, s := range q.Sample {
			if i >= len(s.Value) || len(s.Location) == 0 || len(s.Location[0].Line) == 0 || s.Location[0].Line[0].Function == nil {
				continue
			}
			name := s.Location[0].Line[0].Function.Name
			for len(all[name]) <= n {
				all[name] = append(all[name], 0)
			}
			all[name][n] += float64(s.Value[i]) / work
		}
	}
	for name, v := range all {
		for len(v) < len(ps) {
			v = append(v, 0)
		}
		out[name] = stats.Median(v)
	}
	return out
}
