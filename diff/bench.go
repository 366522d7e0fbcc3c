package diff

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// CompareBench compares `go test -bench` outputs (the benchfmt format;
// several -count runs per benchmark) with the same verdict engine as
// Compare: for each benchmark and unit, a Mann–Whitney U test over the runs
// (benchmath.AssumeNothing, with its warnings when there are too few runs),
// Benjamini–Hochberg across all of them, and the minimum relative change.
// Row.Name is the benchmark, Row.File its unit (tidied as benchstat does:
// ns/op becomes sec/op), Base.Metric and Head.Metric the medians. For units
// where higher is better (throughput: a unit ending in "/s", or a unit
// declared "better=higher") an increase is an improvement.
func CompareBench(base, head io.Reader, opts ...Option) (*Report, error) {
	s := DefaultSettings
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.apply(&s); err != nil {
			return nil, err
		}
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	bv, bh, err := readBench("base", base)
	if err != nil {
		return nil, err
	}
	hv, hh, err := readBench("head", head)
	if err != nil {
		return nil, err
	}
	rep := &Report{Settings: s, Base: Side{Runs: bv.runs}, Head: Side{Runs: hv.runs}}
	higher := func(unit string) bool {
		return bh[unit] || hh[unit] || strings.HasSuffix(unit, "/s")
	}
	th := benchmath.DefaultThresholds
	th.CompareAlpha = s.Alpha
	var cand []int
	keys := map[benchKey]bool{}
	for k := range bv.vals {
		keys[k] = true
	}
	for k := range hv.vals {
		keys[k] = true
	}
	for k := range keys {
		row := Row{Name: k.name, File: k.unit, P: 1, Q: 1, Test: "none"}
		b, inB := bv.vals[k]
		h, inH := hv.vals[k]
		if inB {
			row.Base.Metric = median(b)
			row.Base.Samples = int64(len(b))
		}
		if inH {
			row.Head.Metric = median(h)
			row.Head.Samples = int64(len(h))
		}
		row.Delta = row.Head.Metric - row.Base.Metric
		switch {
		case !inB:
			row.Verdict = New
		case !inH:
			row.Verdict = Gone
		default:
			var c benchmath.Comparison
			row.Test, c = s.compareRuns(b, h)
			row.P, row.Q = c.P, c.P
			for _, w := range c.Warnings {
				row.Warnings = append(row.Warnings, w.Error())
			}
			if row.Base.Metric != 0 {
				row.Relative = row.Head.Metric/row.Base.Metric - 1
			}
			if higher(k.unit) {
				// Worse is what a regression means: flip the sign.
				row.Delta, row.Relative = -row.Delta, -row.Relative
			}
		}
		rep.Rows = append(rep.Rows, row)
	}
	for i := range rep.Rows {
		if rep.Rows[i].Verdict == "" {
			cand = append(cand, i)
		}
	}
	var up, down []int
	for _, i := range cand {
		if rep.Rows[i].Delta > 0 {
			up = append(up, i)
		} else {
			down = append(down, i)
		}
	}
	benjaminiHochberg(rep.Rows, up)
	benjaminiHochberg(rep.Rows, down)
	for _, i := range cand {
		row := &rep.Rows[i]
		switch {
		case math.Abs(row.Relative) < s.MinRelative:
			// As in Compare: the family is every result on both
			// sides, the minimum effect applies after the adjustment.
			row.Verdict, row.Q = Unchanged, 1
		case row.Q >= s.Alpha:
			row.Verdict = Unchanged
		case row.Delta > 0:
			row.Verdict = Regressed
		default:
			row.Verdict = Improved
		}
	}
	sort.SliceStable(rep.Rows, func(i, j int) bool {
		a, b := &rep.Rows[i], &rep.Rows[j]
		if verdictOrder[a.Verdict] != verdictOrder[b.Verdict] {
			return verdictOrder[a.Verdict] < verdictOrder[b.Verdict]
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.File < b.File
	})
	rep.bench = true
	rep.Warnings = append(rep.Warnings, testWarnings(rep.Rows, "results")...)
	return rep, nil
}

type benchKey struct{ name, unit string }

type benchSide struct {
	vals map[benchKey][]float64
	runs int // most runs of any benchmark
}

// readBench reads one benchfmt stream; higher lists the units declared
// better=higher.
func readBench(name string, r io.Reader) (*benchSide, map[string]bool, error) {
	if r == nil {
		return nil, nil, fmt.Errorf("diff: no %s benchmark input", name)
	}
	rd := benchfmt.NewReader(r, name)
	sd := &benchSide{vals: map[benchKey][]float64{}}
	var syntax []string
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.Result:
			for _, v := range rec.Values {
				k := benchKey{rec.Name.String(), v.Unit}
				sd.vals[k] = append(sd.vals[k], v.Value)
				sd.runs = max(sd.runs, len(sd.vals[k]))
			}
		case *benchfmt.SyntaxError:
			syntax = append(syntax, rec.Error())
		}
	}
	if err := rd.Err(); err != nil {
		return nil, nil, fmt.Errorf("diff: reading %s benchmarks: %w", name, err)
	}
	if len(sd.vals) == 0 {
		msg := fmt.Sprintf("diff: %s has no benchmark results", name)
		if len(syntax) > 0 {
			msg += ": " + syntax[0]
		}
		return nil, nil, errors.New(msg)
	}
	higher := map[string]bool{}
	for k, m := range rd.Units() {
		if k.Key == "better" && m.Value == "higher" {
			higher[k.Unit] = true
		}
	}
	return sd, higher, nil
}
