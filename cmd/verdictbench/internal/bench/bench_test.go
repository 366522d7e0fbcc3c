package bench

import (
	"bytes"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/verdictbench"
	"github.com/hotbudget/hotbudget/loaders"
)

const dataDir = "../../../../testdata/verdict"

// small keeps two Go sets, whose comparisons take milliseconds.
func small(key string) bool { return key == "go-other" || key == "go-app B vs A" }

func TestHarnessMechanics(t *testing.T) {
	run := func(workers int) (*Results, string) {
		res, err := Run(Config{Data: dataDir, Draws: 4, Workers: workers, keep: small})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := res.Fprint(&b, "markdown"); err != nil {
			t.Fatal(err)
		}
		return res, b.String()
	}
	res, out1 := run(1)
	_, out2 := run(3)
	if out1 != out2 {
		t.Errorf("the same seed printed different tables with 1 and 3 workers:\n%s\n---\n%s", out1, out2)
	}
	if len(res.OneASide) != 1 || len(res.Splits) != 1 {
		t.Errorf("%d one-a-side rows and %d split rows, want 1 each", len(res.OneASide), len(res.Splits))
	}
	for _, row := range append(res.OneASide, res.Splits...) {
		if row.Comparisons != 20 {
			t.Errorf("%s: %d comparisons, want 20", row.Set, row.Comparisons)
		}
	}
	if len(res.AB) != 2 || res.AB[0].RunsASide != 1 || res.AB[1].RunsASide != 5 || res.AB[1].Changed != goAppChanged {
		t.Errorf("A/B rows %+v", res.AB)
	}
	if len(res.Whole) != 0 {
		t.Errorf("whole-program rows %+v", res.Whole)
	}
	// go-other has 10 runs: 3 functions × 2 changes × 4 sizes, the
	// 10-a-side cells impossible.
	if len(res.Inject) != 24 {
		t.Fatalf("%d injection rows, want 24", len(res.Inject))
	}
	for _, row := range res.Inject {
		impossible := row.Set == "go-other" && row.RunsASide == 10
		if impossible != (row.Draws == 0) || impossible && !strings.Contains(row.Note, "needs 20 runs") {
			t.Errorf("%s %dv%d: %d draws, note %q", row.Set, row.RunsASide, row.RunsASide, row.Draws, row.Note)
		}
		if !impossible && row.Draws != map[bool]int{true: 2, false: 4}[row.RunsASide >= 5] {
			t.Errorf("%s %dv%d: %d draws", row.Set, row.RunsASide, row.RunsASide, row.Draws)
		}
		if row.Function == goAppChanged {
			t.Errorf("the changed function %s was injected into", row.Function)
		}
	}
	for _, want := range []string{"A/A, one profile a side", "| go-other | ", "| go-app B vs A | main.checksum | 5 | ", "Injected regressions", "needs 20 runs, the set has 10"} {
		if !strings.Contains(out1, want) {
			t.Errorf("the tables lack %q", want)
		}
	}
}

// TestSetsDrawAsAmongOthers: a set run alone (Config.Sets) draws what it
// draws among the others, so that its rows equal the full tables' rows.
func TestSetsDrawAsAmongOthers(t *testing.T) {
	among, err := Run(Config{Data: dataDir, Draws: 6, keep: func(key string) bool {
		return key == "go-app A" || key == "go-app (A+B)" || key == "go-other"
	}})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := Run(Config{Data: dataDir, Draws: 6, Sets: regexp.MustCompile(`^go-other$`)})
	if err != nil {
		t.Fatal(err)
	}
	var splits []AARow
	for _, r := range among.Splits {
		if r.Set == "go-other" {
			splits = append(splits, r)
		}
	}
	var inject []InjectRow
	for _, r := range among.Inject {
		if r.Set == "go-other" {
			inject = append(inject, r)
		}
	}
	if len(splits) != 1 || len(inject) != 24 {
		t.Fatalf("among others: %d go-other split rows, %d injection rows; want 1 and 24", len(splits), len(inject))
	}
	if !reflect.DeepEqual(alone.Splits, splits) {
		t.Errorf("go-other's 5-vs-5 splits alone %+v, among others %+v", alone.Splits, splits)
	}
	if !reflect.DeepEqual(alone.Inject, inject) {
		t.Errorf("go-other's injection rows differ alone and among others:\n%+v\n%+v", alone.Inject, inject)
	}
}

func TestTargets(t *testing.T) {
	shares := map[string]float64{"a": 0.011, "b": 0.008, "c": 0.029, "d": 0.05, "e": 0.12, "x": 0.03}
	got := targets(shares, []float64{0.01, 0.03, 0.10}, "x")
	if strings.Join(got, ",") != "a,c,e" {
		t.Errorf("targets = %v, want a (1.1%%), c (2.9%%; x excluded), e (12%%)", got)
	}
	// Distinct functions even when one is closest to two shares.
	got = targets(map[string]float64{"a": 0.02, "b": 0.5}, []float64{0.01, 0.03}, "")
	if strings.Join(got, ",") != "a,b" {
		t.Errorf("targets = %v, want a,b", got)
	}
}

// TestInjectRealProfiles checks the injection on real V8 and Go profiles
// against the analysis package: the function's self samples grow by the
// injected count, nothing else changes, and +50% adds about half.
func TestInjectRealProfiles(t *testing.T) {
	for _, c := range []struct{ file, fn string }{
		{dataDir + "/node-lib/A-1000us-01.cpuprofile.gz", "pp.readWord"},
		{dataDir + "/go-app/A-01.pb.gz", "encoding/json.checkValid"},
	} {
		p, err := loaders.Load(c.file)
		if err != nil {
			t.Fatal(err)
		}
		before, err := analysis.Functions(p)
		if err != nil {
			t.Fatal(err)
		}
		q, st, err := verdictbench.Inject(p, c.fn, verdictbench.Self, 0.5, verdictbench.NewRand(1, 1))
		if err != nil {
			t.Fatal(err)
		}
		after, err := analysis.Functions(q)
		if err != nil {
			t.Fatal(err)
		}
		self := func(tb *analysis.Table, name string) (n int64) {
			for _, f := range tb.Find(name) {
				n += f.SelfSamples
			}
			return n
		}
		s0, s1 := self(before, c.fn), self(after, c.fn)
		if s0 != st.Matched || s1 != s0+st.Added {
			t.Errorf("%s: %s self samples %d -> %d, injection matched %d added %d", c.file, c.fn, s0, s1, st.Matched, st.Added)
		}
		if sd := math.Sqrt(0.25 * float64(s0)); math.Abs(float64(st.Added)-0.5*float64(s0)) > 4*sd {
			t.Errorf("%s: +50%% of %d samples added %d", c.file, s0, st.Added)
		}
		if after.TotalSamples != before.TotalSamples+st.Added {
			t.Errorf("%s: total samples %d -> %d, added %d", c.file, before.TotalSamples, after.TotalSamples, st.Added)
		}
		other := before.Functions[0].Name
		if other == c.fn {
			other = before.Functions[1].Name
		}
		if self(before, other) != self(after, other) {
			t.Errorf("%s: %s changed too", c.file, other)
		}
	}
}

// often counts each flagged function by its whole name and prints long
// names (V8 names a compiled regexp by its source) cut at 40 characters.
func TestOftenCutsLongNames(t *testing.T) {
	long := "RegExp: " + strings.Repeat("(?:a|b)", 20)
	outs := []outcome{{regressed: []string{long, "pp.next"}}, {regressed: []string{long}}, {regressed: []string{"skipped"}}}
	got := often(outs, "skipped")
	want := string([]rune(long)[:40]) + "… ×2, pp.next ×1"
	if got != want {
		t.Errorf("often = %q, want %q", got, want)
	}
}
