package bench

import (
	"fmt"
	"slices"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/verdictbench"
)

// aaSets are the sets of identical runs; split says they are for the
// 5-vs-5 splits, which the quick run makes on fewer sets. They are all
// listed, kept or not (Config.Sets): a set's position seeds its draws,
// so that a set run alone draws what it draws among the others.
func (d *data) aaSets(split bool) []set {
	var all []set
	switch {
	case d.cfg.Quick && split:
		all = []set{nodeLibA1000, nodeOther1000, goAppA, goOther, goAppPerfA, goOtherPerf}
	case d.cfg.Quick:
		all = []set{nodeLibA100, nodeLibA1000, nodeOther1000, goAppA, goOther, goAppPerfA, goOtherPerf}
	default:
		all = []set{nodeLibA100, nodeLibA1000, nodeLibB100, nodeLibB1000, nodeOther1000, nodeOther100, goAppA, goAppB, goAppC, goOther,
			goAppPerfA, goAppPerfB, goAppPerfC, goOtherPerf}
		if d.cfg.Regress != "" {
			all = append(all, regressBase)
		}
	}
	return all
}

// oneASide: every ordered pair of the first 5 runs of each set.
func oneASide(d *data, r *Results) error {
	pairs := verdictbench.OrderedPairs(5)
	for _, s := range d.aaSets(false) {
		if !d.kept(s.Key) {
			continue
		}
		ps, err := d.runs(s)
		if err != nil {
			return err
		}
		if len(ps) < 5 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %d runs, fewer than 5: no one-a-side row", s.Key, len(ps)))
			continue
		}
		outs, err := d.runAll(len(pairs), func(i int) ([]*profile.Profile, []*profile.Profile, error) {
			return ps[pairs[i][0] : pairs[i][0]+1], ps[pairs[i][1] : pairs[i][1]+1], nil
		})
		if err != nil {
			return err
		}
		r.OneASide = append(r.OneASide, aaRow(s.Key, outs))
		d.progress("A/A 1v1 %s: %d/%d fail", s.Key, r.OneASide[len(r.OneASide)-1].Fails, len(outs))
	}
	return nil
}

// splits: 20 random 5-vs-5 splits of 10 identical runs.
func splits(d *data, r *Results) error {
	const n = 20
	for ci, s := range d.aaSets(true) {
		if !d.kept(s.Key) {
			continue
		}
		ps, err := d.runs(s)
		if err != nil {
			return err
		}
		if len(ps) < 10 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %d runs, fewer than 10: no 5-vs-5 split row", s.Key, len(ps)))
			continue
		}
		draws := make([][2][]int, n)
		rng := verdictbench.NewRand(d.cfg.Seed, 1000+uint64(ci))
		for i := range draws {
			a, b := verdictbench.Disjoint(rng, 10, 5, 5)
			draws[i] = [2][]int{a, b}
		}
		outs, err := d.runAll(n, func(i int) ([]*profile.Profile, []*profile.Profile, error) {
			return pick(ps, draws[i][0]), pick(ps, draws[i][1]), nil
		})
		if err != nil {
			return err
		}
		row := aaRow(s.Key, outs)
		row.drawn = draws
		r.Splits = append(r.Splits, row)
		d.progress("A/A 5v5 %s: %d/%d fail", s.Key, r.Splits[len(r.Splits)-1].Fails, n)
	}
	return nil
}

type abCase struct {
	key     string
	a, b    set
	changed string
}

func (d *data) abCases() []abCase {
	return []abCase{
		{"node-lib 1000µs", nodeLibA1000, nodeLibB1000, nodeLibChanged},
		{"node-lib 100µs", nodeLibA100, nodeLibB100, nodeLibChanged},
		{"go-app B vs A", goAppA, goAppB, goAppChanged},
		{"go-app-perf B vs A", goAppPerfA, goAppPerfB, goAppChanged},
	}
}

// ab: real one-function changes, 20 draws of 5 of 10 runs a side (and, in
// the full run, the 20 ordered one-a-side pairs of the first 5 runs).
func ab(d *data, r *Results) error {
	const n = 20
	for ci, c := range d.abCases() {
		if !d.kept(c.key) {
			continue // listed still: its position seeds the others' draws
		}
		pa, err := d.runs(c.a)
		if err != nil {
			return err
		}
		pb, err := d.runs(c.b)
		if err != nil {
			return err
		}
		sizes := []int{5}
		if !d.cfg.Quick {
			sizes = []int{1, 5}
		}
		for _, k := range sizes {
			var outs []outcome
			if k == 1 {
				pairs := verdictbench.OrderedPairs(5)
				outs, err = d.runAll(len(pairs), func(i int) ([]*profile.Profile, []*profile.Profile, error) {
					return pa[pairs[i][0] : pairs[i][0]+1], pb[pairs[i][1] : pairs[i][1]+1], nil
				})
			} else {
				rng := verdictbench.NewRand(d.cfg.Seed, 2000+uint64(ci))
				draws := make([][2][]int, n)
				for i := range draws {
					draws[i] = [2][]int{verdictbench.Pick(rng, len(pa), k), verdictbench.Pick(rng, len(pb), k)}
				}
				outs, err = d.runAll(n, func(i int) ([]*profile.Profile, []*profile.Profile, error) {
					return pick(pa, draws[i][0]), pick(pb, draws[i][1]), nil
				})
			}
			if err != nil {
				return err
			}
			row := ABRow{Set: c.key, Changed: c.changed, RunsASide: k, Comparisons: len(outs), Often: often(outs, c.changed)}
			for _, o := range outs {
				if slices.Contains(o.regressed, c.changed) {
					row.Named++
				}
				if slices.ContainsFunc(o.regressed, func(f string) bool { return f != c.changed }) {
					row.Others++
				}
			}
			r.AB = append(r.AB, row)
			d.progress("A/B %s %dv%d: named %d/%d, others %d", c.key, k, k, row.Named, row.Comparisons, row.Others)
		}
	}
	return nil
}

// whole: go-app C (the whole program ~15% slower, same work) against A, at
// 100 Hz and with perf events.
func whole(d *data, r *Results) error {
	for ci, c := range []abCase{{"go-app C vs A", goAppA, goAppC, ""}, {"go-app-perf C vs A", goAppPerfA, goAppPerfC, ""}} {
		if d.kept(c.key) {
			if err := wholeCase(d, r, c, uint64(ci)); err != nil {
				return err
			}
		}
	}
	return nil
}

func wholeCase(d *data, r *Results, c abCase, ci uint64) error {
	pa, err := d.runs(c.a)
	if err != nil {
		return err
	}
	pc, err := d.runs(c.b)
	if err != nil {
		return err
	}
	pairs := verdictbench.OrderedPairs(5)
	outs, err := d.runAll(len(pairs), func(i int) ([]*profile.Profile, []*profile.Profile, error) {
		return pa[pairs[i][0] : pairs[i][0]+1], pc[pairs[i][1] : pairs[i][1]+1], nil
	})
	if err != nil {
		return err
	}
	one := WholeRow{Set: c.key, RunsASide: 1, Comparisons: len(outs), Often: often(outs, "")}
	for _, o := range outs {
		if o.fails {
			one.Fails++
		}
	}
	r.Whole = append(r.Whole, one)
	const n = 20
	rng := verdictbench.NewRand(d.cfg.Seed, 3000+ci)
	draws := make([][2][]int, n)
	for i := range draws {
		draws[i] = [2][]int{verdictbench.Pick(rng, len(pa), 5), verdictbench.Pick(rng, len(pc), 5)}
	}
	outs, err = d.runAll(n, func(i int) ([]*profile.Profile, []*profile.Profile, error) {
		return pick(pa, draws[i][0]), pick(pc, draws[i][1]), nil
	})
	if err != nil {
		return err
	}
	row := WholeRow{Set: c.key, RunsASide: 5, Comparisons: n, Often: often(outs, "")}
	for _, o := range outs {
		if o.fails {
			row.Fails++
		}
	}
	r.Whole = append(r.Whole, row)
	d.progress("whole-program %s: 1v1 %d/%d, 5v5 %d/%d fail", c.key, one.Fails, one.Comparisons, row.Fails, n)
	return nil
}
