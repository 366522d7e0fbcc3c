package limits

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/loaders"
)

// TestEstimateHeadroomArithmetic: the estimate of five runs of ten
// iterations, by hand.
func TestEstimateHeadroomArithmetic(t *testing.T) {
	ms := float64(time.Millisecond)
	v := []float64{10 * ms, 12 * ms, 8 * ms, 11 * ms, 9 * ms}
	w := []float64{10, 10, 10, 10, 10}
	h, ok := estimateHeadroom(v, w, 0, nil, 0, 2*time.Millisecond, true)
	if !ok {
		t.Fatal("no estimate from five runs")
	}
	// Value 1ms an iteration; runs 0.8-1.2ms; deviations of the runs'
	// times from the value's share of them: 0, 2, -2, 1, -1 ms.
	rse := math.Sqrt(5.0/4*10) / 50 // ms
	between := max(betweenFloor, rse*math.Sqrt(5))
	sigma := math.Hypot(rse, between)
	want := roundUp(ms * math.Exp((z99+z95)*sigma))
	if h.value != ms || h.lo != 0.8*ms || h.hi != 1.2*ms || math.Abs(h.within-rse) > 1e-12 ||
		math.Abs(h.cv-rse*math.Sqrt(5)) > 1e-12 || h.suggest != want || h.runs != 5 {
		t.Errorf("estimate %+v, want value 1ms, runs 0.8-1.2ms, within %.4f, suggest %v", h, rse, want)
	}
	fail := 0.5 * math.Erfc(math.Log(2)/(math.Sqrt2*sigma)/math.Sqrt2)
	if math.Abs(h.failRate-fail) > 1e-12 {
		t.Errorf("fail rate of 2ms %v, want %v", h.failRate, fail)
	}
	// Runs that move more than the floor between captures allows widen
	// it to how much they moved: the normal SD their logarithms' median
	// absolute deviation stands for. Runs of 0.5, 1.5, 0.8, 1.4, 0.6 and
	// 1.2ms: the logarithms' median is ln sqrt(0.8*1.2), the middle
	// deviations ln(1.4/sqrt(0.96)) and ln(1.5/sqrt(0.96)).
	noisy := []float64{5 * ms, 15 * ms, 8 * ms, 14 * ms, 6 * ms, 12 * ms}
	h, _ = estimateHeadroom(noisy, []float64{10, 10, 10, 10, 10, 10}, 0, nil, 0, time.Second, true)
	if want := 1.4826 * (math.Log(1.4/math.Sqrt(0.96)) + math.Log(1.5/math.Sqrt(0.96))) / 2; math.Abs(h.between-want) > 1e-9 {
		t.Errorf("noisy runs: between %.4f, want %.4f", h.between, want)
	}
	// One run unlike the others (a warm-up) is not a noisy machine.
	warm := []float64{40 * ms, 10 * ms, 10.2 * ms, 9.9 * ms, 10.1 * ms, 10 * ms, 9.8 * ms}
	h, _ = estimateHeadroom(warm, []float64{10, 10, 10, 10, 10, 10, 10}, 0, nil, 0, time.Second, true)
	if h.between != betweenFloor || h.cv < 0.7 {
		t.Errorf("a warm-up run: CV %.2f, between %.3f, want the floor %v", h.cv, h.between, betweenFloor)
	}
	// Without PerIteration the value is the runs' sum, and the range each
	// run's time.
	h, _ = estimateHeadroom(v, []float64{0.2, 0.2, 0.2, 0.2, 0.2}, 0, nil, 0, time.Second, false)
	if h.value != 50*ms || h.lo != 8*ms || h.hi != 12*ms || math.Abs(h.within-rse) > 1e-12 {
		t.Errorf("summed estimate %+v, want value 50ms, runs 8-12ms, within %.4f", h, rse)
	}
}

// TestEstimateHeadroomRefuses: fewer than five runs, runs without work,
// nothing measured.
func TestEstimateHeadroomRefuses(t *testing.T) {
	for _, c := range []struct {
		v, w []float64
	}{
		{[]float64{1, 2, 3, 4}, []float64{1, 1, 1, 1}},
		{[]float64{1, 2, 3, 4, 5}, []float64{1, 1, 0, 1, 1}},
		{[]float64{0, 0, 0, 0, 0}, []float64{1, 1, 1, 1, 1}},
		{[]float64{1, 2, 3, 4, 5}, []float64{1, 1, 1, 1}},
	} {
		if h, ok := estimateHeadroom(c.v, c.w, 0, nil, 0, time.Second, true); ok {
			t.Errorf("estimate of %v over %v: %+v, want none", c.v, c.w, h)
		}
	}
}

// TestEstimateHeadroomSamplingFloor: runs that agree exactly still carry
// the sampling noise of their samples, and none beyond it between runs.
func TestEstimateHeadroomSamplingFloor(t *testing.T) {
	v := []float64{5e6, 5e6, 5e6, 5e6, 5e6, 5e6}
	w := []float64{5, 5, 5, 5, 5, 5}
	h, _ := estimateHeadroom(v, w, 100, nil, 0, time.Second, true)
	if h.within != 0.1 || h.between != betweenFloor || h.cv != 0 {
		t.Errorf("within %v between %v cv %v, want 0.1 (100 samples), %v, 0", h.within, h.between, h.cv, betweenFloor)
	}
	// Runs that vary as much as their samples do vary no more than that.
	v = []float64{4e6, 6e6, 5e6, 4e6, 6e6, 5e6}
	h, _ = estimateHeadroom(v, w, 30, nil, 0, time.Second, true)
	if h.between != betweenFloor {
		t.Errorf("between %v, want the floor %v: a CV of %.2f is the sampling noise of 5 samples a run", h.between, betweenFloor, h.cv)
	}
}

// TestHeadroomHoldsWhenTheModelDoes: on simulated captures whose values
// vary between captures and between runs as the estimate assumes, the
// limit suggested from each capture fails at most about 1 in 100 of the
// others, and few captures suggest a limit that fails many more. Seeded.
func TestHeadroomHoldsWhenTheModelDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 1))
	const captures, runs = 400, 15
	type capture struct {
		value   float64
		suggest float64
	}
	cs := make([]capture, captures)
	for i := range cs {
		// A capture's state, shared by its runs; runs vary by 10%
		// around it and hold 60 samples each.
		state := betweenFloor * rng.NormFloat64()
		v, w := make([]float64, runs), make([]float64, runs)
		for j := range v {
			w[j] = 10
			v[j] = 1e6 * w[j] * math.Exp(state+0.1*rng.NormFloat64())
		}
		h, ok := estimateHeadroom(v, w, 60*runs, nil, 0, time.Second, true)
		if !ok {
			t.Fatal("no estimate")
		}
		cs[i] = capture{h.value, float64(h.suggest)}
	}
	var fails, pairs, bad int
	for i, ref := range cs {
		f := 0
		for j, c := range cs {
			if i != j && c.value > ref.suggest {
				f++
			}
		}
		fails += f
		pairs += len(cs) - 1
		if f > (len(cs)-1)/50 { // more than 2 in 100
			bad++
		}
	}
	if rate := float64(fails) / float64(pairs); rate > 0.01 {
		t.Errorf("suggested limits failed %.2f%% of other captures, want at most 1%%", 100*rate)
	}
	if float64(bad) > 0.05*captures {
		t.Errorf("%d of %d captures suggested a limit that fails more than 2 in 100 others, want at most a twentieth", bad, captures)
	}
}

// runsCapture is a capture-like profile: runs of ten iterations, run i
// with fs(i) samples (1ms each) in main.f and 100 in main.g, both under
// main.main, labelled by run.
func runsCapture(t *testing.T, n int, fs func(i int) int) *profile.Profile {
	t.Helper()
	var ps []*profile.Profile
	rec := meta.Record{Name: "capture of TestX", WorkUnit: meta.WorkIteration, Build: "go1.26.8 linux/amd64"}
	for i := range n {
		q, err := loaders.Read(strings.NewReader(fmt.Sprintf("main.main;main.f %d\nmain.main;main.g 100\n", fs(i))), loaders.WithFormat(loaders.FormatFolded))
		if err != nil {
			t.Fatal(err)
		}
		label := fmt.Sprint(i + 1)
		for _, s := range q.Sample {
			s.Label = map[string][]string{meta.LabelRun: {label}}
		}
		ps = append(ps, q)
		rec.Runs = append(rec.Runs, meta.Run{Label: label, Work: 10})
	}
	p, err := profile.Merge(ps)
	if err != nil {
		t.Fatal(err)
	}
	meta.Set(p, rec)
	return p
}

// TestCheckSaysHeadroom: a time limit on a capture says how the runs
// varied and the limit that would hold; shares, a capture's summed time,
// pooled profiles and captures of too few runs do not.
func TestCheckSaysHeadroom(t *testing.T) {
	p := runsCapture(t, 8, func(i int) int { return 200 + 10*(i%3) })
	r, err := Check(p, "main.f", Limit{Quantity: SelfTime, Time: 25 * time.Millisecond}, PerIteration())
	if err != nil {
		t.Fatal(err)
	}
	s := r.String()
	for _, want := range []string{
		"main.f self time 20.88ms per iteration",
		"\nruns: the capture's 8 runs measured 20ms-22ms per iteration (CV 4.0%), so its value is known to ±2.4%; captures in separate processes differ by a further ±20% (as measured between processes on a loaded 2-core VM), which one capture cannot see\n",
		"\nheadroom: a limit of 47ms (2.25 times the value) would hold 99 times in 100 on this machine; at 25ms, about 26 captures in 100 of unchanged code would fail (docs/capture.md#headroom)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("result text lacks %q:\n%s", want, s)
		}
	}
	if r.headroom == nil || r.headroom.suggest < 40*time.Millisecond || r.headroom.suggest > 50*time.Millisecond {
		t.Errorf("headroom %+v, want a limit of 40-50ms (1.9-2.4 times 20.88ms)", r.headroom)
	}
	// The estimate's value is the check's.
	if r.headroom != nil && math.Abs(r.headroom.value-float64(r.Value)) > 1 {
		t.Errorf("headroom value %v, check's %v", r.headroom.value, time.Duration(r.Value))
	}
	// A regexp selector judges what its matches pool, run by run too.
	r2, err := Check(p, "^main\\.[fg]$", Limit{Quantity: SelfTime, Time: time.Second}, PerIteration(), Regexp())
	if err != nil {
		t.Fatal(err)
	}
	if r2.headroom == nil || math.Abs(r2.headroom.value-float64(r2.Value)) > 1 {
		t.Errorf("regexp: headroom %+v, check's value %v", r2.headroom, time.Duration(r2.Value))
	}

	// A profile of benchmark runs (hotbudget record's) bounds their summed
	// time without PerIteration, and is named a profile.
	ops := runsCapture(t, 8, func(i int) int { return 200 + 10*(i%3) })
	rec, _, _ := meta.Get(ops)
	rec.WorkUnit = meta.WorkOp
	meta.Set(ops, rec)
	r3, err := Check(ops, "main.f", Limit{Quantity: SelfTime, Time: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s = r3.String()
	for _, want := range []string{
		"main.f self time 1.67s (",
		"\nruns: the profile's 8 runs measured 200ms-220ms each (CV 4.0%), so its value is known to ±2.4%; profiles in separate processes differ by a further ±20% (",
		"), which one profile cannot see\nheadroom: a limit of 3.80s (2.28 times the value) would hold 99 times in 100 on this machine; at 2s, about 26 profiles in 100 of unchanged code would fail",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("ops profile: text lacks %q:\n%s", want, s)
		}
	}

	for name, c := range map[string]struct {
		p    []*profile.Profile
		l    Limit
		opts []Option
	}{
		"share":      {[]*profile.Profile{p}, Limit{Quantity: SelfShare, Share: 0.9}, []Option{PerIteration()}},
		"summed":     {[]*profile.Profile{p}, Limit{Quantity: SelfTime, Time: time.Second}, nil},
		"pooled":     {[]*profile.Profile{p, p}, Limit{Quantity: SelfTime, Time: time.Second}, []Option{PerIteration()}},
		"no runs":    {[]*profile.Profile{exampleFolded(t)}, Limit{Quantity: SelfTime, Time: time.Second}, nil},
		"three runs": {[]*profile.Profile{runsCapture(t, 3, func(int) int { return 200 })}, Limit{Quantity: SelfTime, Time: time.Second}, []Option{PerIteration()}},
	} {
		ck, err := NewChecker(c.p...)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ck.Check("main.f", c.l, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		s := r.String()
		if strings.Contains(s, "\nruns:") || strings.Contains(s, "a limit of") {
			t.Errorf("%s: says headroom:\n%s", name, s)
		}
		if few := strings.Contains(s, "headroom: the capture has 3 runs, too few to tell how its value varies (5 are needed; a longer MaxDuration, or more MinSamples, give a capture more)"); few != (name == "three runs") {
			t.Errorf("%s: says too few runs %v:\n%s", name, few, s)
		}
	}
}

func exampleFolded(t *testing.T) *profile.Profile {
	t.Helper()
	p, err := loaders.Read(strings.NewReader("main.main;main.f 200\nmain.main;main.g 100\n"), loaders.WithFormat(loaders.FormatFolded))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHeadroomWords: how often a limit would fail, in words, and the spread
// between captures said as what it came from.
func TestHeadroomWords(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want string
	}{
		{0.004, "fewer than 1 capture in 100"},
		{0.012, "about 1 capture in 100"},
		{0.14, "about 14 captures in 100"},
		{0.9996, "about 99 captures in 100"},
	} {
		if got := failWords(c.p, "capture"); !strings.HasPrefix(got, c.want) {
			t.Errorf("failWords(%v) = %q, want %q...", c.p, got, c.want)
		}
	}
	// Runs alternating 50 and 350 samples move far more than their
	// sampling noise: the spread between captures follows them.
	p := runsCapture(t, 10, func(i int) int { return 50 + 300*(i%2) })
	r, err := Check(p, "main.f", Limit{Quantity: SelfTime, Time: 20 * time.Millisecond}, PerIteration())
	if err != nil {
		t.Fatal(err)
	}
	if s := r.String(); !strings.Contains(s, "(as much as the capture's runs moved beyond their sampling noise), which one capture cannot see") || r.headroom.between <= betweenFloor {
		t.Errorf("noisy runs: between %v, text:\n%s", r.headroom.between, s)
	}
}
