package bench

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/index"
	"github.com/hotbudget/hotbudget/internal/verdictbench"
)

// injectSet is a pool of identical (or nearly identical) runs to inject
// regressions into.
type injectSet struct {
	key     string
	sets    []set  // pooled
	exclude string // a function that differs between the pooled sets
}

// injectSets are the pools of the injection table, all of them, kept or
// not (Config.Sets): a cell's number among them seeds its draws.
func (d *data) injectSets() []injectSet {
	lib1000 := injectSet{"node-lib 1000µs (A+B)", []set{nodeLibA1000, nodeLibB1000}, nodeLibChanged}
	app := injectSet{"go-app (A+B)", []set{goAppA, goAppB}, goAppChanged}
	appPerf := injectSet{"go-app-perf (A+B)", []set{goAppPerfA, goAppPerfB}, goAppChanged}
	all := []injectSet{lib1000, app, appPerf}
	if !d.cfg.Quick {
		all = []injectSet{
			lib1000,
			{"node-lib 100µs (A+B)", []set{nodeLibA100, nodeLibB100}, nodeLibChanged},
			{"node-other 1000µs", []set{nodeOther1000}, ""},
			app,
			{"go-other", []set{goOther}, ""},
			appPerf,
			{"go-other-perf", []set{goOtherPerf}, ""},
		}
	}
	return all
}

// pool loads the runs of is and the functions inject draws as targets
// from them, with every function's mean share.
func (d *data) pool(is injectSet, wantShares []float64) (pool []*profile.Profile, shares map[string]float64, fns []string, err error) {
	for _, s := range is.sets {
		ps, err := d.runs(s)
		if err != nil {
			return nil, nil, nil, err
		}
		pool = append(pool, ps...)
	}
	if shares, err = meanShares(pool); err != nil {
		return nil, nil, nil, err
	}
	return pool, shares, targets(shares, wantShares, is.exclude), nil
}

// meanShares returns the mean self share of every function over the runs,
// for functions with one row of that name in every table (so that
// injecting by name touches exactly that function) and not synthetic.
func meanShares(ps []*profile.Profile) (map[string]float64, error) {
	sum := map[string]float64{}
	bad := map[string]bool{}
	for _, p := range ps {
		t, err := analysis.Functions(p)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, f := range t.Functions {
			if seen[f.Name] || index.IsSynthetic(f.Name) {
				bad[f.Name] = true
			}
			seen[f.Name] = true
			sum[f.Name] += f.SelfShare
		}
	}
	out := map[string]float64{}
	for f, s := range sum {
		if !bad[f] {
			out[f] = s / float64(len(ps))
		}
	}
	return out, nil
}

// targets picks the functions whose mean self share is closest to each of
// want (in log terms), distinct, never exclude.
func targets(shares map[string]float64, want []float64, exclude string) []string {
	names := make([]string, 0, len(shares))
	for f := range shares {
		if f != exclude && shares[f] > 0 {
			names = append(names, f)
		}
	}
	sort.Strings(names)
	var out []string
	for _, w := range want {
		best, bd := "", math.Inf(1)
		for _, f := range names {
			if slices.Contains(out, f) {
				continue
			}
			if dist := math.Abs(math.Log(shares[f] / w)); dist < bd {
				best, bd = f, dist
			}
		}
		if best != "" {
			out = append(out, best)
		}
	}
	return out
}

// inject: regressions injected into real runs.
func inject(d *data, r *Results) error {
	wantShares := []float64{0.01, 0.03, 0.10}
	changes := []float64{0.2, 0.5}
	sizes := []int{1, 3, 5, 10}
	if d.cfg.Quick {
		wantShares = []float64{0.03}
		changes = []float64{0.5}
		sizes = []int{5}
	}
	cell := uint64(0)
	for _, is := range d.injectSets() {
		if !d.kept(is.key) {
			// Its cells are counted still: a cell's number seeds its
			// draws, the same whichever sets run. A set has a target
			// function for every wanted share (checked below whenever
			// it runs), so its runs need not be loaded to count them:
			// loading the Node sets took most of the tests' time.
			cell += uint64(len(wantShares) * len(changes) * len(sizes))
			continue
		}
		pool, shares, fns, err := d.pool(is, wantShares)
		if err != nil {
			return err
		}
		if len(fns) != len(wantShares) {
			return fmt.Errorf("inject: set %s has %d target functions for %d wanted shares: the cells of the sets after it would be numbered otherwise when it does not run", is.key, len(fns), len(wantShares))
		}
		for _, fn := range fns {
			for _, change := range changes {
				for _, k := range sizes {
					cell++
					row := InjectRow{Set: is.key, Function: fn, Share: shares[fn], Change: change, RunsASide: k}
					if 2*k > len(pool) {
						row.Note = fmt.Sprintf("needs %d runs, the set has %d", 2*k, len(pool))
						r.Inject = append(r.Inject, row)
						continue
					}
					draws := d.cfg.Draws
					if k >= 5 {
						draws = max(draws/2, 1)
					}
					rng := verdictbench.NewRand(d.cfg.Seed, 4000+cell)
					type sides struct {
						base, head []int
						seed       uint64
					}
					plan := make([]sides, draws)
					for i := range plan {
						a, b := verdictbench.Disjoint(rng, len(pool), k, k)
						plan[i] = sides{a, b, rng.Uint64()}
					}
					outs, err := d.runAll(draws, func(i int) ([]*profile.Profile, []*profile.Profile, error) {
						irng := verdictbench.NewRand(plan[i].seed, 0)
						head := make([]*profile.Profile, 0, k)
						for _, h := range pick(pool, plan[i].head) {
							q, _, err := verdictbench.Inject(h, fn, verdictbench.Self, change, irng)
							if err != nil {
								return nil, nil, err
							}
							head = append(head, q)
						}
						return pick(pool, plan[i].base), head, nil
					})
					if err != nil {
						return err
					}
					row.Draws = draws
					for _, o := range outs {
						if slices.Contains(o.regressed, fn) {
							row.Power++
						}
						if slices.ContainsFunc(o.regressed, func(f string) bool { return f != fn && f != is.exclude }) {
							row.FalseAlarms++
						}
					}
					r.Inject = append(r.Inject, row)
					d.progress("inject %s %s +%.0f%% %dv%d: power %d/%d, false alarms %d", is.key, fn, 100*change, k, k, row.Power, draws, row.FalseAlarms)
				}
			}
		}
		if is.exclude != "" {
			r.Notes = append(r.Notes, fmt.Sprintf("%s pools the A and B runs, which differ in %s only: base and head are disjoint random draws from the pool; %s is never a target and its verdict is not counted as a false alarm.", is.key, is.exclude, is.exclude))
		}
	}
	return nil
}
