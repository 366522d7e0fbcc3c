package diff_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
)

// drawStacks draws a folded profile of n samples over the given stacks
// ("main;f;g") with the given weights (not necessarily summing to 1).
func drawStacks(t testing.TB, r *rand.Rand, n int, stacks []string, weights []float64) *profile.Profile {
	var sum float64
	for _, w := range weights {
		sum += w
	}
	counts := make([]int, len(stacks))
	for range n {
		u := r.Float64() * sum
		j := 0
		for ; j < len(stacks)-1 && u >= weights[j]; j++ {
			u -= weights[j]
		}
		counts[j]++
	}
	var b strings.Builder
	for j, c := range counts {
		if c > 0 {
			fmt.Fprintf(&b, "%s %d\n", stacks[j], c)
		}
	}
	return folded(t, b.String())
}

// On the real regression fixture main.renderReport has one caller path,
// and all of its change comes through it.
func TestExplainRegressFixture(t *testing.T) {
	base, head := loadGlob(t, "../testdata/regress/base-*.pb.gz"), loadGlob(t, "../testdata/regress/head-*.pb.gz")
	r := compare(t, base, head)
	row := rowOf(t, r, "main.renderReport")
	ex := row.Explain
	if ex == nil || ex.By != "callers" || len(ex.Paths) != 1 {
		t.Fatalf("explanation %+v, want one caller path", ex)
	}
	pc := ex.Paths[0]
	if got := strings.Join(pc.Path, " → "); got != "runtime.main → main.main → main.run → main.renderReport" {
		t.Errorf("path %s", got)
	}
	if pc.Verdict != diff.Regressed || pc.Share != 1 {
		t.Errorf("path verdict %s share %v, want regressed carrying all", pc.Verdict, pc.Share)
	}
	if !strings.Contains(ex.Summary, fmt.Sprintf("all of the %+.1f%% comes through runtime.main → main.main → main.run → main.renderReport", 100*row.Relative)) {
		t.Errorf("summary %q", ex.Summary)
	}
	// Only regressed and improved rows are explained.
	for _, row := range r.Rows {
		if (row.Explain != nil) != (row.Verdict == diff.Regressed || row.Verdict == diff.Improved) {
			t.Errorf("%s (%s): explanation %v", row.Name, row.Verdict, row.Explain)
		}
	}
	// The only path is the function: its values are the row's, and its
	// delta that of the function's mean self share per run, computed here
	// from analysis.Functions (with runtime.asyncPreempt charged to the
	// function it interrupted, as the diff does by default).
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }
	if !near(pc.Base, row.Base.Metric) || !near(pc.Head, row.Head.Metric) || !near(pc.Relative, row.Relative) {
		t.Errorf("path base %v head %v change %v; row %v %v %v", pc.Base, pc.Head, pc.Relative, row.Base.Metric, row.Head.Metric, row.Relative)
	}
	// The side's share: the function's self time over the side's total,
	// both summed over its runs (go tool pprof -top of them merged).
	meanShare := func(ps []*profile.Profile) float64 {
		var self, total float64
		for _, p := range ps {
			tab, err := analysis.Functions(p, diff.DefaultSettings().Selection)
			if err != nil {
				t.Fatal(err)
			}
			total += float64(tab.Total)
			for _, f := range tab.Find("main.renderReport") {
				self += float64(f.Self)
			}
		}
		return self / total
	}
	// The path's shown shares are the function's mean shares, and its
	// delta the row's own judged change, not one of means the table does
	// not show.
	if !near(pc.BaseMean, meanShare(base)) || !near(pc.HeadMean, meanShare(head)) {
		t.Errorf("path means %v %v, want the mean shares %v %v", pc.BaseMean, pc.HeadMean, meanShare(base), meanShare(head))
	}
	if b, h := r.ShownValues(row); math.Abs(pc.BaseMean-b) > 1e-9 || math.Abs(pc.HeadMean-h) > 1e-9 {
		t.Errorf("path shares %v %v, the row's shown %v %v", pc.BaseMean, pc.HeadMean, b, h)
	}
	if want := row.Head.Metric - row.Base.Metric; math.Abs(ex.Delta-want) > 1e-12 || ex.Delta != pc.Delta {
		t.Errorf("explanation delta %v, path %v, want %v", ex.Delta, pc.Delta, want)
	}
}

// parse is called through render and through load; five runs a side of
// 4000 samples, and only the calls through render take 50% more. The
// explanation puts the change on the render path, judged regressed, and
// calls the load path unchanged. Seeded.
func TestExplainTwoCallers(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 1))
	stacks := []string{"main;handler;render;parse", "main;load;parse", "main;handler;render", "main;gc", "main;io"}
	var base, head []*profile.Profile
	for range 5 {
		base = append(base, drawStacks(t, r, 4000, stacks, []float64{20, 20, 20, 20, 20}))
		head = append(head, drawStacks(t, r, 4000, stacks, []float64{30, 20, 20, 20, 20}))
	}
	rep := compare(t, base, head, diff.WithAssumption(diff.AssumeNormal))
	row := rowOf(t, rep, "parse")
	if row.Verdict != diff.Regressed || row.Explain == nil {
		t.Fatalf("parse %s, explanation %v", row.Verdict, row.Explain)
	}
	ex := row.Explain
	if len(ex.Paths) != 2 {
		t.Fatalf("paths %+v, want two", ex.Paths)
	}
	byPath := map[string]diff.PathChange{}
	var shares float64
	for _, pc := range ex.Paths {
		byPath[strings.Join(pc.Path, ";")] = pc
		shares += pc.Share
	}
	render, load := byPath["main;handler;render;parse"], byPath["main;load;parse"]
	if render.Verdict != diff.Regressed || load.Verdict != diff.Unchanged {
		t.Errorf("render path %s (p=%.3g), load path %s (p=%.3g)", render.Verdict, render.P, load.Verdict, load.P)
	}
	if render.Share < 0.8 || math.Abs(shares-1) > 1e-9 {
		t.Errorf("render path carries %.2f of the change, shares sum to %v", render.Share, shares)
	}
	// Expected: render's path grows 50% against a yardstick of the others.
	if math.Abs(render.Relative-0.5) > 0.15 || math.Abs(load.Relative) > 0.1 {
		t.Errorf("path changes %+.3f and %+.3f, want about +0.5 and 0", render.Relative, load.Relative)
	}
	for _, want := range []string{"comes through main → handler → render → parse", "the path main → load → parse is unchanged"} {
		if !strings.Contains(ex.Summary, want) {
			t.Errorf("summary %q lacks %q", ex.Summary, want)
		}
	}
}

// A function called from ten places, only one of which grew: the
// explanation lists at most four entries, the grown path first and the
// rest summed.
func TestExplainGroupsManyCallers(t *testing.T) {
	var base, head strings.Builder
	for i := range 10 {
		n := 100
		fmt.Fprintf(&base, "main;c%d;hot %d\n", i, n)
		if i == 3 {
			n = 400
		}
		fmt.Fprintf(&head, "main;c%d;hot %d\n", i, n)
	}
	base.WriteString("main;a 1000\nmain;b 1000\nmain;c 1000\n")
	head.WriteString("main;a 1000\nmain;b 1000\nmain;c 1000\n")
	rep := compare(t, one(folded(t, base.String())), one(folded(t, head.String())))
	ex := rowOf(t, rep, "hot").Explain
	if ex == nil {
		t.Fatal("hot not explained")
	}
	if len(ex.Paths) > 4 {
		t.Errorf("%d paths listed, want at most 4", len(ex.Paths))
	}
	first, last := ex.Paths[0], ex.Paths[len(ex.Paths)-1]
	if strings.Join(first.Path, ";") != "main;c3;hot" || first.Verdict != diff.Regressed {
		t.Errorf("first path %v %s, want main;c3;hot regressed", first.Path, first.Verdict)
	}
	if last.Others == 0 || len(last.Path) != 0 || last.Verdict != diff.Unchanged {
		t.Errorf("last entry %+v, want the other paths summed, unchanged", last)
	}
	n := 0
	for _, pc := range ex.Paths {
		n += max(pc.Others, 1)
	}
	if n != 10 {
		t.Errorf("entries cover %d paths, want 10", n)
	}
}

// Compared on total time, a function's change is split over its callees,
// its own self time being one of them.
func TestExplainCallees(t *testing.T) {
	base := folded(t, "main;handler;render;parse 300\nmain;handler;render 200\nmain;handler;load 300\nmain;gc 200\n")
	head := folded(t, "main;handler;render;parse 450\nmain;handler;render 200\nmain;handler;load 300\nmain;gc 200\n")
	rep := compare(t, one(base), one(head), diff.WithMetric(diff.Total), diff.WithMode(diff.Absolute))
	ex := rowOf(t, rep, "handler").Explain
	if ex == nil || ex.By != "callees" {
		t.Fatalf("handler explanation %+v", ex)
	}
	got := map[string]diff.Verdict{}
	for _, pc := range ex.Paths {
		got[strings.Join(pc.Path, ";")+fmt.Sprint(pc.End)] = pc.Verdict
	}
	want := map[string]diff.Verdict{
		"handler;render;parsetrue": diff.Regressed, // parse's time under render
		"handler;rendertrue":       diff.Unchanged, // render's own time
		"handler;loadtrue":         diff.Unchanged,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("paths %v, want %v", got, want)
	}
	if strings.Join(ex.Paths[0].Path, ";") != "handler;render;parse" {
		t.Errorf("first path %+v, want the grown one", ex.Paths[0])
	}
	if d := ex.Paths[0].Delta; math.Abs(d-150e6) > 1 {
		t.Errorf("delta %v ns, want 150 samples of 1ms", d)
	}
	if !strings.HasPrefix(ex.Summary, "+18.8% of the +18.8% comes through handler → render → parse (self)") {
		t.Errorf("summary %q", ex.Summary)
	}
}
