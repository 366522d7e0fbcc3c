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
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
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
	// Sets, when set, limits every table to the sets whose key (the
	// table's first column, "go-app-perf (A+B)") it matches.
	Sets *regexp.Regexp

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
	// The same programs sampled with perf events at 2 kHz.
	goAppPerfA  = set{"go-app-perf A", "go-app-perf/A-*.pb.gz"}
	goAppPerfB  = set{"go-app-perf B", "go-app-perf/B-*.pb.gz"}
	goAppPerfC  = set{"go-app-perf C", "go-app-perf/C-*.pb.gz"}
	goOtherPerf = set{"go-other-perf", "go-other-perf/A-*.pb.gz"}
	regressBase = set{"regress base", "regress:base-*.pb.gz"}
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
		p, err := loadFile(f)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	d.cache[s.Key] = ps
	return ps, nil
}

// loaded keeps the profiles this process has loaded, by file: a run that
// reads the pool another run of the process read (the tests run several)
// gets a copy instead of parsing the JSON again, which took most of their
// time.
var loaded sync.Map // fileKey -> *profile.Profile

type fileKey struct {
	path string
	size int64
	mod  int64
}

func loadFile(path string) (*profile.Profile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	k := fileKey{path, st.Size(), st.ModTime().UnixNano()}
	if p, ok := loaded.Load(k); ok {
		return p.(*profile.Profile).Copy(), nil
	}
	p, err := loaders.Load(path)
	if err != nil {
		return nil, err
	}
	loaded.Store(k, p.Copy())
	return p, nil
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

	drawn [][2][]int // the runs of each comparison's sides, when drawn: rows compared in tests (reflect.DeepEqual) then drew alike
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

func (d *data) kept(key string) bool {
	return (d.cfg.keep == nil || d.cfg.keep(key)) && (d.cfg.Sets == nil || d.cfg.Sets.MatchString(key))
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
