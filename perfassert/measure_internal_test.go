package perfassert

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/verdictbench"
	"github.com/hotbudget/hotbudget/loaders"
)

// TestMeasureProcessBaselines judges, offline, the captures a golden
// measurement kept (HOTBUDGET_MEASURE_KEEP of TestMeasureThirdPartyGolden
// or TestMeasureUserModuleGolden: NN-NAME.pb.gz, each one process; NAME
// ending in "slow" is the slower code) as MatchBaseline judges them, with
// baselines of K processes drawn from the unchanged captures (seeded), each
// compared with an unchanged capture left out of it (false alarms) and
// with every slower one (power). K=1 is a baseline of one process, judged
// run against run as before baselines held processes. It asserts nothing:
//
//	HOTBUDGET_MEASURE_DIR=dir HOTBUDGET_MEASURE_ONLY='^github.com/buger/jsonparser[./]' \
//	HOTBUDGET_MEASURE_FUNC=ObjectEach go test ./perfassert -run MeasureProcessBaselines -v
//
// HOTBUDGET_MEASURE_THIN=f (0 < f < 1) first keeps each sample of every
// capture with probability f (seeded), as a sampler f times as fast would
// have taken them: the power a longer sampling period costs.
// HOTBUDGET_MEASURE_K=k judges baselines of k processes only;
// HOTBUDGET_MEASURE_HEADS=h compares heads of h processes (h unchanged
// captures left out of the baseline, or h distinct slower ones);
// HOTBUDGET_MEASURE_SCREEN=a judges the first head process alone at rate a
// first, and all h only when it fails there. HOTBUDGET_MEASURE_HEADDIR=dir2
// draws the heads from the captures of another recording in dir2 (made at
// another time, as a golden test runs after its baseline was recorded).
func TestMeasureProcessBaselines(t *testing.T) {
	dir := os.Getenv("HOTBUDGET_MEASURE_DIR")
	if dir == "" {
		t.Skip("a measurement, not a test: set HOTBUDGET_MEASURE_DIR to the captures of a golden measurement")
	}
	only := regexp.MustCompile(os.Getenv("HOTBUDGET_MEASURE_ONLY"))
	target := os.Getenv("HOTBUDGET_MEASURE_FUNC")
	trials := 60
	if v, err := strconv.Atoi(os.Getenv("HOTBUDGET_MEASURE_TRIALS")); err == nil && v > 0 {
		trials = v
	}
	load := func(dir string) (same, slow []*profile.Profile) {
		files, err := filepath.Glob(filepath.Join(dir, "*.pb.gz"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no captures in %s: %v", dir, err)
		}
		sort.Strings(files)
		for _, f := range files {
			p, err := loaders.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if frac, err := strconv.ParseFloat(os.Getenv("HOTBUDGET_MEASURE_THIN"), 64); err == nil && frac > 0 && frac < 1 {
				thin(t, p, frac, rand.New(rand.NewPCG(7, uint64(len(same)+len(slow)))))
			}
			if strings.HasSuffix(strings.TrimSuffix(filepath.Base(f), ".pb.gz"), "slow") {
				slow = append(slow, p)
			} else {
				same = append(same, p)
			}
		}
		return same, slow
	}
	// A comma-separated list of directories: one recording of several
	// sessions (a baseline recorded at several times).
	var same, slow []*profile.Profile
	for _, d := range strings.Split(dir, ",") {
		a, b := load(d)
		same, slow = append(same, a...), append(slow, b...)
	}
	t.Logf("%d unchanged captures, %d slower", len(same), len(slow))
	// HOTBUDGET_MEASURE_HEADDIR: the heads come from another recording (a
	// baseline recorded at one time, the test run at another).
	headSame, headSlow, other := same, slow, false
	if hd := os.Getenv("HOTBUDGET_MEASURE_HEADDIR"); hd != "" {
		headSame, headSlow = load(hd)
		other = true
		t.Logf("heads from %s: %d unchanged captures, %d slower", hd, len(headSame), len(headSlow))
	}
	merge := func(ps []*profile.Profile) *profile.Profile {
		if len(ps) == 1 {
			return ps[0]
		}
		p, err := meta.MergeProcesses(ps)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	alpha := 0.0
	if a, err := strconv.ParseFloat(os.Getenv("HOTBUDGET_MEASURE_ALPHA"), 64); err == nil {
		alpha = a
	}
	screen, _ := strconv.ParseFloat(os.Getenv("HOTBUDGET_MEASURE_SCREEN"), 64)
	judgeAt := func(a float64, base, head *profile.Profile) (failed, caught bool, named []string) {
		bx, err := analysis.NewIndex(base)
		if err != nil {
			t.Fatal(err)
		}
		hx, err := analysis.NewIndex(head)
		if err != nil {
			t.Fatal(err)
		}
		c := baselineSides(t, "measured", bx, hx)
		opts := []diff.Option{diff.WithHeadline(false), diff.WithOnly(only)}
		if a > 0 {
			opts = append(opts, diff.WithAlpha(a))
		}
		rep, err := checkIndexes(c.base, c.head, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Regressions() {
			named = append(named, r.Name)
			if os.Getenv("HOTBUDGET_MEASURE_VERBOSE") != "" {
				t.Logf("  %s: base %d head %d samples, %+.1f%%, p=%.2g q=%.2g; noise %+v", r.Name, r.Base.Samples, r.Head.Samples, 100*r.Relative, r.P, r.Q, rep.Noise)
			}
		}
		failed = rep.Failed()
		caught = len(named) == 1 && strings.HasSuffix(named[0], "."+target)
		return failed, caught, named
	}
	// judge compares base with heads[0] alone, or, with a screen, judges
	// heads[0] at the screen's rate first and all of heads only when that
	// fails (as a gate that confirms a suspicion with more processes).
	judge := func(base *profile.Profile, heads []*profile.Profile) (failed, caught bool, named []string) {
		if screen <= 0 {
			return judgeAt(alpha, base, merge(heads))
		}
		if f, _, _ := judgeAt(screen, base, heads[0]); !f {
			return false, false, nil
		}
		return judgeAt(alpha, base, merge(heads))
	}
	ks := []int{1, 3, 5, 8, 10}
	if k, err := strconv.Atoi(os.Getenv("HOTBUDGET_MEASURE_K")); err == nil && k > 0 {
		ks = []int{k}
	}
	heads := 1
	if h, err := strconv.Atoi(os.Getenv("HOTBUDGET_MEASURE_HEADS")); err == nil && h > 0 {
		heads = h
	}
	// HOTBUDGET_MEASURE_INJECT=fn=p: the slower heads are unchanged ones
	// with fn's own time made p larger (verdictbench.Inject), for
	// recordings without a slower build.
	if fn, prob, ok := strings.Cut(os.Getenv("HOTBUDGET_MEASURE_INJECT"), "="); ok && len(headSlow) == 0 {
		pr, err := strconv.ParseFloat(prob, 64)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 3))
		for _, p := range headSame {
			q, st, err := verdictbench.Inject(p, fn, verdictbench.Self, pr, rng)
			if err != nil || st.Matched == 0 {
				t.Fatalf("injecting into %s: %v (%d samples matched)", fn, err, st.Matched)
			}
			headSlow = append(headSlow, q)
		}
	}
	for _, k := range ks {
		own := heads // the heads left out of the baseline's recording
		if other {
			own = 0
		}
		if k+own > len(same) || heads > len(headSame) || (len(headSlow) > 0 && heads > len(headSlow)) {
			continue
		}
		rng := rand.New(rand.NewPCG(1, uint64(k)))
		var fa, n, hit, alone, m int
		names := map[string]int{}
		for range trials {
			perm := rng.Perm(len(same))
			var base *profile.Profile
			if k == 1 {
				base = same[perm[0]]
			} else {
				ps := make([]*profile.Profile, k)
				for i := range ps {
					ps[i] = same[perm[i]]
				}
				var err error
				if base, err = meta.MergeProcesses(ps); err != nil {
					t.Fatal(err)
				}
			}
			var hs []*profile.Profile
			if other {
				hs = pick(headSame, rng.Perm(len(headSame))[:heads])
			} else {
				hs = pick(same, perm[k:k+heads])
			}
			failed, _, named := judge(base, hs)
			n++
			if failed {
				fa++
				for _, nm := range named {
					names[nm]++
				}
			}
			if len(headSlow) > 0 {
				failed, caught, _ := judge(base, pick(headSlow, rng.Perm(len(headSlow))[:heads]))
				m++
				if failed {
					hit++
				}
				if caught {
					alone++
				}
			}
		}
		t.Logf("K=%d processes a baseline: unchanged failed %d/%d (%.1f%%); slower failed %d/%d, %s named alone %d/%d; false alarms named %v",
			k, fa, n, 100*float64(fa)/float64(max(n, 1)), hit, m, target, alone, m, names)
	}
}

// thin keeps each of p's samples with probability f, as a sampler whose
// period is 1/f times as long would have taken them: counts are drawn
// binomially, each kept sample standing for 1/f times its CPU time, and
// the periods (the profile's and each run's) are divided by f.
func thin(t *testing.T, p *profile.Profile, f float64, rng *rand.Rand) {
	kept := p.Sample[:0]
	for _, s := range p.Sample {
		n := int64(0)
		for range s.Value[0] {
			if rng.Float64() < f {
				n++
			}
		}
		if n == 0 {
			continue
		}
		per := float64(s.Value[1]) / float64(s.Value[0])
		s.Value[0], s.Value[1] = n, int64(float64(n)*per/f)
		kept = append(kept, s)
	}
	p.Sample = kept
	p.Period = int64(float64(p.Period) / f)
	rec, ok, err := meta.Get(p)
	if err != nil || !ok {
		t.Fatalf("thinning a capture without its record: %v", err)
	}
	for i := range rec.Runs {
		if rec.Runs[i].PeriodNanos > 0 {
			rec.Runs[i].PeriodNanos = int64(float64(rec.Runs[i].PeriodNanos) / f)
		}
	}
	meta.Set(p, rec)
}

// pick returns ps[i] for each i of idx.
func pick(ps []*profile.Profile, idx []int) []*profile.Profile {
	out := make([]*profile.Profile, len(idx))
	for n, i := range idx {
		out[n] = ps[i]
	}
	return out
}
