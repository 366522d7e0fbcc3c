// Package bench is hotbudget's verdict-accuracy benchmark: it judges real
// recorded profiles (testdata/verdict, testdata/regress) with package diff at
// default settings and measures how often the gate fails on identical runs,
// whether it names a real one-function change and nothing else, whether it
// sees a whole-program slowdown, and its power and false-alarm rate on
// regressions injected at the sample level (verdictbench.Inject).
//
// It sits above package diff, as cmd/hotbudget does: nothing in the module
// imports it but its command (cmd/verdictbench) and tests. Every draw is
// seeded; the tables are the same from run to run and from machine to
// machine, whatever the parallelism.
package bench

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/verdictbench"
	"github.com/hotbudget/hotbudget/loaders"
)

// options are the settings every comparison of the benchmark uses: the
// defaults, but for alpha. An option a headline verdict needs goes here:
// the Go profiles carry the work each run did in their meta record (the
// same in every run and variant); the Node runs did the same work every
// run (120 acorn parses, 50 js-yaml rounds) but carry no record of it.
func options(cfg Config) []diff.Option {
	return []diff.Option{diff.WithAlpha(cfg.Alpha)}
}

// Config says where the data is and how much to run.
type Config struct {
	// Data is the directory of the recordings (testdata/verdict).
	Data string
	// Regress is testdata/regress, whose five base runs are one more A/A
	// set; "" leaves them out.
	Regress string
	// Alpha is the false-discovery rate the comparisons use (diff's
	// default 0.05).
	Alpha float64
	// Seed seeds every draw.
	Seed uint64
	// Quick runs the small version (a few seconds of CPU) that the tests
	// run: fewer sets at 100 µs, fewer injection cells and draws.
	Quick bool
	// Draws is the number of draws per injection cell with 1 and 3 runs a
	// side (half as many with 5 and 10); 0 means 100 (Quick: 80).
	Draws int
	// Workers compare in parallel; 0 means GOMAXPROCS.
	Workers int
	// Progress, when set, receives a line per table cell.
	Progress io.Writer

	// keep, when set, limits every table to the sets it keeps (by key):
	// the tests' small runs.
	keep func(key string) bool
}

func (c *Config) defaults() {
	if c.Alpha == 0 {
		c.Alpha = diff.DefaultSettings().Alpha
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Draws == 0 {
		c.Draws = 100
		if c.Quick {
			c.Draws = 80
		}
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
}

// A set is the runs of one program variant at one sampling interval.
type set struct {
	Key  string // as printed: "node-lib A 100µs"
	Glob string // under Config.Data, or "regress:" + glob under Config.Regress
}

// The recorded sets.
var (
	nodeLibA100   = set{"node-lib A 100µs", "node-lib/A-100us-*.cpuprofile.gz"}
	nodeLibB100   = set{"node-lib B 100µs", "node-lib/B-100us-*.cpuprofile.gz"}
	nodeLibA1000  = set{"node-lib A 1000µs", "node-lib/A-1000us-*.cpuprofile.gz"}
	nodeLibB1000  = set{"node-lib B 1000µs", "node-lib/B-1000us-*.cpuprofile.gz"}
	nodeOther1000 = set{"node-other 1000µs", "node-other/A-1000us-*.cpuprofile.gz"}
	nodeOther100  = set{"node-other 100µs", "node-other/A-100us-*.cpuprofile.gz"}
	goAppA        = set{"go-app A", "go-app/A-*.pb.gz"}
	goAppB        = set{"go-app B", "go-app/B-*.pb.gz"}
	goAppC        = set{"go-app C", "go-app/C-*.pb.gz"}
	goOther       = set{"go-other", "go-other/A-*.pb.gz"}
	regressBase   = set{"regress base", "regress:base-*.pb.gz"}
)

// The changed functions of the A/B sets.
const (
	nodeLibChanged = "pp.getTokenFromCode"
	goAppChanged   = "main.checksum"
)

// data loads sets once.
type data struct {
	cfg   Config
	mu    sync.Mutex
	cache map[string][]*profile.Profile
}

func (d *data) runs(s set) ([]*profile.Profile, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ps, ok := d.cache[s.Key]; ok {
		return ps, nil
	}
	dir, glob := d.cfg.Data, s.Glob
	if g, ok := strings.CutPrefix(glob, "regress:"); ok {
		dir, glob = d.cfg.Regress, g
	}
	files, err := filepath.Glob(filepath.Join(dir, glob))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("verdictbench: no files %s under %s", glob, dir)
	}
	sort.Strings(files)
	var ps []*profile.Profile
	for _, f := range files {
		p, err := loaders.Load(f)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	d.cache[s.Key] = ps
	return ps, nil
}

// Results are the benchmark's numbers, as tables and as values.
type Results struct {
	Config   Config
	OneASide []AARow
	Splits   []AARow
	AB       []ABRow
	Whole    []WholeRow
	Inject   []InjectRow
	// Notes are said under the tables (what was skipped and why).
	Notes []string
}

// AARow is the gate's record on comparisons of identical runs.
type AARow struct {
	Set         string
	Comparisons int
	Fails       int // comparisons where the gate fails (diff.Report.Failed)
	Flagged     int // regressed rows in all comparisons
	// Often names the functions flagged most often, with counts.
	Often string
}

// ABRow is the gate's record on a real one-function change.
type ABRow struct {
	Set, Changed string
	RunsASide    int
	Comparisons  int
	Named        int // comparisons flagging the changed function
	Others       int // comparisons flagging any other function
	Often        string
}

// WholeRow is the gate's record on a whole-program slowdown.
type WholeRow struct {
	Set         string
	RunsASide   int
	Comparisons int
	Fails       int
	Often       string
}

// InjectRow is one cell of the injection table.
type InjectRow struct {
	Set, Function string
	Share         float64 // mean self share of the function in the pool
	Change        float64 // 0.2 = +20%
	RunsASide     int
	Draws         int // 0: not possible with this set (Note says why)
	Power         int // draws flagging the function as regressed
	FalseAlarms   int // draws flagging any other function as regressed
	Note          string
}

// Run runs the benchmark.
func Run(cfg Config) (*Results, error) {
	cfg.defaults()
	d := &data{cfg: cfg, cache: map[string][]*profile.Profile{}}
	r := &Results{Config: cfg}
	steps := []func(*data, *Results) error{oneASide, splits, ab, whole, inject}
	for _, step := range steps {
		if err := step(d, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (d *data) progress(format string, args ...any) {
	if d.cfg.Progress != nil {
		fmt.Fprintf(d.cfg.Progress, format+"\n", args...)
	}
}

// outcome is what one comparison flagged.
type outcome struct {
	fails     bool
	regressed []string
}

// compare judges head against base.
func (d *data) compare(base, head []*profile.Profile) (outcome, error) {
	rep, err := diff.Compare(base, head, options(d.cfg)...)
	if err != nil {
		return outcome{}, err
	}
	o := outcome{fails: rep.Failed()}
	for _, row := range rep.Regressions() {
		o.regressed = append(o.regressed, row.Name)
	}
	return o, nil
}

// job builds the two sides of comparison i.
type job func(i int) (base, head []*profile.Profile, err error)

// runAll runs n comparisons on the workers; outcomes are in job order.
func (d *data) runAll(n int, j job) ([]outcome, error) {
	out := make([]outcome, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < d.cfg.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				base, head, err := j(i)
				if err == nil {
					out[i], err = d.compare(base, head)
				}
				errs[i] = err
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func pick(ps []*profile.Profile, idx []int) []*profile.Profile {
	out := make([]*profile.Profile, len(idx))
	for i, k := range idx {
		out[i] = ps[k]
	}
	return out
}

// often summarises the functions flagged in outcomes, except skip: the
// three flagged most often, with counts.
func often(outs []outcome, skip string) string {
	n := map[string]int{}
	for _, o := range outs {
		for _, f := range o.regressed {
			if f != skip {
				n[f]++
			}
		}
	}
	names := make([]string, 0, len(n))
	for f := range n {
		names = append(names, f)
	}
	sort.Slice(names, func(a, b int) bool {
		return n[names[a]] > n[names[b]] || n[names[a]] == n[names[b]] && names[a] < names[b]
	})
	var parts []string
	for i, f := range names {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("+%d more", len(names)-3))
			break
		}
		name := f
		if r := []rune(f); len(r) > 40 {
			name = string(r[:40]) + "…" // V8 names compiled regexps by their source
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", name, n[f]))
	}
	return strings.Join(parts, ", ")
}

func aaRow(key string, outs []outcome) AARow {
	row := AARow{Set: key, Comparisons: len(outs), Often: often(outs, "")}
	for _, o := range outs {
		if o.fails {
			row.Fails++
		}
		row.Flagged += len(o.regressed)
	}
	return row
}

func (d *data) kept(key string) bool { return d.cfg.keep == nil || d.cfg.keep(key) }

// aaSets are the sets of identical runs; split says they are for the
// 5-vs-5 splits, which the quick run makes on fewer sets.
func (d *data) aaSets(split bool) []set {
	var all []set
	switch {
	case d.cfg.Quick && split:
		all = []set{nodeLibA1000, nodeOther1000, goAppA, goOther}
	case d.cfg.Quick:
		all = []set{nodeLibA100, nodeLibA1000, nodeOther1000, goAppA, goOther}
	default:
		all = []set{nodeLibA100, nodeLibA1000, nodeLibB100, nodeLibB1000, nodeOther1000, nodeOther100, goAppA, goAppB, goAppC, goOther}
		if d.cfg.Regress != "" {
			all = append(all, regressBase)
		}
	}
	var out []set
	for _, s := range all {
		if d.kept(s.Key) {
			out = append(out, s)
		}
	}
	return out
}

// oneASide: every ordered pair of the first 5 runs of each set.
func oneASide(d *data, r *Results) error {
	pairs := verdictbench.OrderedPairs(5)
	for _, s := range d.aaSets(false) {
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
		r.Splits = append(r.Splits, aaRow(s.Key, outs))
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
	c := []abCase{
		{"node-lib 1000µs", nodeLibA1000, nodeLibB1000, nodeLibChanged},
		{"node-lib 100µs", nodeLibA100, nodeLibB100, nodeLibChanged},
		{"go-app B vs A", goAppA, goAppB, goAppChanged},
	}
	var out []abCase
	for _, x := range c {
		if d.kept(x.key) {
			out = append(out, x)
		}
	}
	return out
}

// ab: real one-function changes, 20 draws of 5 of 10 runs a side (and, in
// the full run, the 20 ordered one-a-side pairs of the first 5 runs).
func ab(d *data, r *Results) error {
	const n = 20
	for ci, c := range d.abCases() {
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

// whole: go-app C (the whole program ~15% slower, same work) against A.
func whole(d *data, r *Results) error {
	if !d.kept("go-app C vs A") {
		return nil
	}
	pa, err := d.runs(goAppA)
	if err != nil {
		return err
	}
	pc, err := d.runs(goAppC)
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
	row := WholeRow{Set: "go-app C vs A", RunsASide: 1, Comparisons: len(outs), Often: often(outs, "")}
	for _, o := range outs {
		if o.fails {
			row.Fails++
		}
	}
	r.Whole = append(r.Whole, row)
	const n = 20
	rng := verdictbench.NewRand(d.cfg.Seed, 3000)
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
	row = WholeRow{Set: "go-app C vs A", RunsASide: 5, Comparisons: n, Often: often(outs, "")}
	for _, o := range outs {
		if o.fails {
			row.Fails++
		}
	}
	r.Whole = append(r.Whole, row)
	d.progress("whole-program C vs A: 1v1 %d/%d, 5v5 %d/%d fail", r.Whole[0].Fails, r.Whole[0].Comparisons, row.Fails, n)
	return nil
}

// injectSet is a pool of identical (or nearly identical) runs to inject
// regressions into.
type injectSet struct {
	key     string
	sets    []set  // pooled
	exclude string // a function that differs between the pooled sets
}

func (d *data) injectSets() []injectSet {
	lib1000 := injectSet{"node-lib 1000µs (A+B)", []set{nodeLibA1000, nodeLibB1000}, nodeLibChanged}
	app := injectSet{"go-app (A+B)", []set{goAppA, goAppB}, goAppChanged}
	all := []injectSet{lib1000, app}
	if !d.cfg.Quick {
		all = []injectSet{
			lib1000,
			{"node-lib 100µs (A+B)", []set{nodeLibA100, nodeLibB100}, nodeLibChanged},
			{"node-other 1000µs", []set{nodeOther1000}, ""},
			app,
			{"go-other", []set{goOther}, ""},
		}
	}
	var out []injectSet
	for _, s := range all {
		if d.kept(s.key) {
			out = append(out, s)
		}
	}
	return out
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
			if seen[f.Name] || analysis.IsSynthetic(f.Name) {
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
		var pool []*profile.Profile
		for _, s := range is.sets {
			ps, err := d.runs(s)
			if err != nil {
				return err
			}
			pool = append(pool, ps...)
		}
		shares, err := meanShares(pool)
		if err != nil {
			return err
		}
		for _, fn := range targets(shares, wantShares, is.exclude) {
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

// Fprint writes the results as tables: format "markdown" or "text".
func (r *Results) Fprint(w io.Writer, format string) error {
	tables := r.tables()
	for i, t := range tables {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var err error
		if format == "markdown" {
			err = t.markdown(w)
		} else {
			err = t.text(w)
		}
		if err != nil {
			return err
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range r.Notes {
			if format == "markdown" {
				fmt.Fprintf(w, "- %s\n", n)
			} else {
				fmt.Fprintf(w, "note: %s\n", n)
			}
		}
	}
	return nil
}

// Print writes the results to standard output.
func (r *Results) Print(format string) error { return r.Fprint(os.Stdout, format) }
