package verdictbench

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// testProfile builds, by hand:
//
//	sample 0: main.a                          count 10, 100 ns
//	sample 1: main.b <- main.a                count 4,  40 ns
//	sample 2: main.c (inlined in main.b) <- main.a   count 3, 100 ns
//	sample 3: main.a <- main.b <- main.a      count 6,  60 ns
//
// a's self count is 16 (samples 0 and 3), b's self count 4 (sample 1: c is
// sample 2's leaf), a's total 23, b's total 13, c's total 3.
func testProfile() *profile.Profile {
	fa := &profile.Function{ID: 1, Name: "main.a"}
	fb := &profile.Function{ID: 2, Name: "main.b"}
	fc := &profile.Function{ID: 3, Name: "main.c"}
	la := &profile.Location{ID: 1, Line: []profile.Line{{Function: fa}}}
	lb := &profile.Location{ID: 2, Line: []profile.Line{{Function: fb}}}
	lcb := &profile.Location{ID: 3, Line: []profile.Line{{Function: fc}, {Function: fb}}}
	lbl := map[string][]string{"thread": {"main"}}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10,
		Function:   []*profile.Function{fa, fb, fc},
		Location:   []*profile.Location{la, lb, lcb},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{la}, Value: []int64{10, 100}, Label: lbl},
			{Location: []*profile.Location{lb, la}, Value: []int64{4, 40}},
			{Location: []*profile.Location{lcb, la}, Value: []int64{3, 100}},
			{Location: []*profile.Location{la, lb, la}, Value: []int64{6, 60}},
		},
	}
}

func values(p *profile.Profile) [][]int64 {
	var out [][]int64
	for _, s := range p.Sample {
		out = append(out, s.Value)
	}
	return out
}

func TestInjectAll(t *testing.T) {
	// With probability 1 every count of a matched sample is duplicated:
	// the copies are the samples themselves, right after them.
	cases := []struct {
		fn    string
		scope Scope
		want  [][]int64
		st    Injected
	}{
		{"main.a", Self, [][]int64{{10, 100}, {10, 100}, {4, 40}, {3, 100}, {6, 60}, {6, 60}}, Injected{16, 16}},
		{"main.b", Self, [][]int64{{10, 100}, {4, 40}, {4, 40}, {3, 100}, {6, 60}}, Injected{4, 4}},
		{"main.c", Self, [][]int64{{10, 100}, {4, 40}, {3, 100}, {3, 100}, {6, 60}}, Injected{3, 3}},
		// b is on the stacks of samples 1, 2 (inlined caller of c) and 3.
		{"main.b", Total, [][]int64{{10, 100}, {4, 40}, {4, 40}, {3, 100}, {3, 100}, {6, 60}, {6, 60}}, Injected{13, 13}},
		// a's recursion in sample 3 is counted once.
		{"main.a", Total, [][]int64{{10, 100}, {10, 100}, {4, 40}, {4, 40}, {3, 100}, {3, 100}, {6, 60}, {6, 60}}, Injected{23, 23}},
		{"main.none", Total, [][]int64{{10, 100}, {4, 40}, {3, 100}, {6, 60}}, Injected{}},
	}
	for _, c := range cases {
		p := testProfile()
		q, st, err := Inject(p, c.fn, c.scope, 1, NewRand(1, 1))
		if err != nil {
			t.Fatal(err)
		}
		if got := values(q); !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("%s %v: values %v, want %v", c.fn, c.scope, got, c.want)
		}
		if st != c.st {
			t.Errorf("%s %v: %+v, want %+v", c.fn, c.scope, st, c.st)
		}
		if got := values(p); !slices.EqualFunc(got, values(testProfile()), slices.Equal) {
			t.Errorf("%s %v: the input profile changed: %v", c.fn, c.scope, got)
		}
	}
	// Labels and stacks travel with the copy.
	q, _, _ := Inject(testProfile(), "main.a", Self, 1, NewRand(1, 1))
	if q.Sample[1].Label["thread"][0] != "main" || q.Sample[1].Location[0] != q.Sample[0].Location[0] {
		t.Errorf("the copy of sample 0 lost its label or stack")
	}
	// Probability 0 adds nothing.
	q, st, _ := Inject(testProfile(), "main.a", Self, 0, NewRand(1, 1))
	if len(q.Sample) != 4 || st != (Injected{16, 0}) {
		t.Errorf("p=0: %d samples, %+v", len(q.Sample), st)
	}
}

func TestInjectScalesValues(t *testing.T) {
	// Sample 2 has 3 counts and 100 ns: k extra counts carry 100·k/3 ns,
	// rounded down (33, 66 or 100).
	seen := map[int64]bool{}
	for seed := uint64(0); seed < 200; seed++ {
		q, st, err := Inject(testProfile(), "main.c", Self, 0.5, NewRand(seed, 0))
		if err != nil {
			t.Fatal(err)
		}
		if st.Added == 0 {
			if len(q.Sample) != 4 {
				t.Fatalf("seed %d: k=0 but %d samples", seed, len(q.Sample))
			}
			continue
		}
		c := q.Sample[3].Value
		if c[0] != st.Added || c[1] != 100*c[0]/3 {
			t.Fatalf("seed %d: copy %v after adding %d counts", seed, c, st.Added)
		}
		seen[c[0]] = true
	}
	if !seen[1] || !seen[2] || !seen[3] {
		t.Errorf("200 draws of Binomial(3, 0.5) gave only k in %v", seen)
	}
}

func TestInjectMean(t *testing.T) {
	// Over many seeds the added count of a's self time is Binomial(16, p):
	// mean 16p, variance 16p(1-p). 4000 draws: the mean is within 4
	// standard errors.
	for _, p := range []float64{0.2, 0.5} {
		var sum, sq float64
		const n = 4000
		for seed := uint64(0); seed < n; seed++ {
			_, st, _ := Inject(testProfile(), "main.a", Self, p, NewRand(7, seed))
			sum += float64(st.Added)
			sq += float64(st.Added * st.Added)
		}
		mean := sum / n
		variance := sq/n - mean*mean
		se := math.Sqrt(16 * p * (1 - p) / n)
		if math.Abs(mean-16*p) > 4*se {
			t.Errorf("p=%v: mean added %.3f, want %.1f ± %.3f", p, mean, 16*p, 4*se)
		}
		if want := 16 * p * (1 - p); math.Abs(variance-want) > 0.15*want {
			t.Errorf("p=%v: variance %.3f, want %.2f", p, variance, want)
		}
	}
}

func TestInjectErrors(t *testing.T) {
	if _, _, err := Inject(nil, "f", Self, 0.5, NewRand(1, 1)); err == nil {
		t.Error("nil profile: no error")
	}
	if _, _, err := Inject(testProfile(), "main.a", Self, 1.5, NewRand(1, 1)); err == nil {
		t.Error("probability 1.5: no error")
	}
	p := testProfile()
	p.SampleType = []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}
	for _, s := range p.Sample {
		s.Value = s.Value[1:]
	}
	if _, _, err := Inject(p, "main.a", Self, 0.5, NewRand(1, 1)); err == nil || !strings.Contains(err.Error(), "cpu/nanoseconds") {
		t.Errorf("no count value: error %v", err)
	}
}

func TestDraws(t *testing.T) {
	pairs := OrderedPairs(5)
	if len(pairs) != 20 || pairs[0] != [2]int{0, 1} || pairs[4] != [2]int{1, 0} || pairs[19] != [2]int{4, 3} {
		t.Errorf("OrderedPairs(5) = %v", pairs)
	}
	seen := map[[2]int]bool{}
	for _, p := range pairs {
		if p[0] == p[1] || seen[p] {
			t.Errorf("pair %v repeated or not distinct", p)
		}
		seen[p] = true
	}
	for seed := uint64(0); seed < 50; seed++ {
		a, b := Disjoint(NewRand(3, seed), 10, 5, 5)
		all := append(slices.Clone(a), b...)
		slices.Sort(all)
		if !slices.Equal(all, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) || !slices.IsSorted(a) || !slices.IsSorted(b) {
			t.Fatalf("Disjoint(10, 5, 5) = %v, %v", a, b)
		}
		a2, b2 := Disjoint(NewRand(3, seed), 10, 5, 5)
		if !slices.Equal(a, a2) || !slices.Equal(b, b2) {
			t.Fatalf("seed %d drew %v|%v then %v|%v", seed, a, b, a2, b2)
		}
	}
	if x := Pick(NewRand(1, 2), 4, 4); !slices.Equal(x, []int{0, 1, 2, 3}) {
		t.Errorf("Pick(4, 4) = %v", x)
	}
}

func TestBinomialSmall(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	if Binomial(rng, 0, 0.5) != 0 || Binomial(rng, 7, 0) != 0 || Binomial(rng, 7, 1) != 7 {
		t.Error("Binomial's edge cases")
	}
}
