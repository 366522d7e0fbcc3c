package diff_test

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/synth"
)

// flameData is the flame graph's JSON in an HTML report.
type flameData struct {
	Diff   bool     `json:"diff"`
	Metric string   `json:"metric"`
	Scale  float64  `json:"scale"`
	Mult   float64  `json:"mult"`
	Names  []string `json:"names"`
	Marks  map[string]string
	Name   []int     `json:"name"`
	Depth  []int     `json:"depth"`
	HS, HT []float64 `json:"-"`
	Raw    map[string]json.RawMessage
	Tested struct {
		I      []int      `json:"i"`
		P      []float64  `json:"p"`
		Change []*float64 `json:"change"`
		Sig    []int      `json:"sig"`
	} `json:"tested"`
}

func readFlame(t *testing.T, page string) (flameData, map[string][]float64) {
	t.Helper()
	const open = `<script type="application/json" id="hb-data">`
	i := strings.Index(page, open)
	if i < 0 {
		t.Fatal("no flame graph data in the page")
	}
	j := strings.Index(page[i:], "</script>")
	raw := []byte(page[i+len(open) : i+j])
	var d flameData
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var cols map[string]any
	if err := json.Unmarshal(raw, &cols); err != nil {
		t.Fatal(err)
	}
	vals := map[string][]float64{}
	for _, k := range []string{"bs", "bt", "hs", "ht"} {
		for _, v := range cols[k].([]any) {
			vals[k] = append(vals[k], v.(float64)/d.Mult)
		}
	}
	return d, vals
}

// The flame graph of the explain fixture, worked by hand: parse is called
// through render (3000 of 10000 samples in base, 4500 of 11500 in head) and
// through load (3000 on both sides); render and gc keep 2000 each, so the
// yardstick (render and gc) moved by 1000/1150 and only the render path's
// parse frame changed: +50%, tested and beyond the noise.
func TestHTMLFlameHandWorked(t *testing.T) {
	base := one(loadGlob(t, "../testdata/cli/explain-base.folded")[0])
	head := one(loadGlob(t, "../testdata/cli/explain-head.folded")[0])
	r := compare(t, base, head)
	var b bytes.Buffer
	if err := r.Write(&b, "html"); err != nil {
		t.Fatal(err)
	}
	d, v := readFlame(t, b.String())
	if !d.Diff || d.Metric != "self" || math.Abs(d.Scale-1000.0/1150) > 1e-9 {
		t.Errorf("diff %v metric %s scale %v", d.Diff, d.Metric, d.Scale)
	}
	path := make([]string, 0, 8)
	frames := map[string]int{}
	for i, n := range d.Name {
		path = append(path[:d.Depth[i]], d.Names[n])
		frames[strings.Join(path, ";")] = i
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	check := func(stack string, bs, bt, hs, ht float64) {
		t.Helper()
		i, ok := frames[stack]
		if !ok {
			t.Fatalf("no frame %s in %v", stack, frames)
		}
		if !near(v["bs"][i], bs) || !near(v["bt"][i], bt) || !near(v["hs"][i], hs) || !near(v["ht"][i], ht) {
			t.Errorf("%s: self/total base %v/%v head %v/%v, want %v/%v %v/%v", stack, v["bs"][i], v["bt"][i], v["hs"][i], v["ht"][i], bs, bt, hs, ht)
		}
	}
	check("all", 0, 1, 0, 1)
	check("all;main;handler;render", 0.2, 0.5, 200.0/1150, 650.0/1150)
	check("all;main;handler;render;parse", 0.3, 0.3, 450.0/1150, 450.0/1150)
	check("all;main;load;parse", 0.3, 0.3, 300.0/1150, 300.0/1150)
	tested := map[int]int{}
	for k, i := range d.Tested.I {
		tested[i] = k
	}
	k, ok := tested[frames["all;main;handler;render;parse"]]
	if !ok || d.Tested.Sig[k] != 1 || d.Tested.Change[k] == nil || math.Abs(*d.Tested.Change[k]-0.5) > 1e-3 {
		t.Errorf("render's parse: tested %v, want +50%% beyond the noise", ok)
	}
	k, ok = tested[frames["all;main;load;parse"]]
	if !ok || d.Tested.Sig[k] != 0 || math.Abs(*d.Tested.Change[k]) > 1e-3 {
		t.Errorf("load's parse: tested %v, want unchanged", ok)
	}
	if d.Marks[itoa(indexOf(d.Names, "parse"))] != "regressed" {
		t.Errorf("marks %v, want parse regressed", d.Marks)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// large is the synthetic comparison the HTML report must scale to: 50,000
// functions, 200,000 stacks of 8 to 24 frames, one hot leaf 50% slower.
var large = synth.PairSpec{Seed: 1, Functions: 50000, Stacks: 200000, MinDepth: 8, MaxDepth: 24, Slower: 4242, Factor: 1.5}

// BenchmarkWriteHTML50k writes the "html" report of the large comparison
// (Compare not included: the report holds the stacks it read).
func BenchmarkWriteHTML50k(b *testing.B) {
	base, head, err := synth.Profiles(large)
	if err != nil {
		b.Fatal(err)
	}
	r, err := diff.Compare([]*profile.Profile{base}, []*profile.Profile{head})
	if err != nil {
		b.Fatal(err)
	}
	var size int
	b.ResetTimer()
	stop := cpuTimer(b)
	for b.Loop() {
		var buf bytes.Buffer
		if err := r.Write(&buf, "html"); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	stop()
	b.ReportMetric(float64(size)/1e6, "MB")
}

// BenchmarkCompareExplain50k compares the large pair, whose one regressed
// function (reached through about 4,000 call paths) is explained: the
// explanation reads every stack of both profiles once more.
func BenchmarkCompareExplain50k(b *testing.B) {
	base, head, err := synth.Profiles(large)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	stop := cpuTimer(b)
	for b.Loop() {
		r, err := diff.Compare([]*profile.Profile{base}, []*profile.Profile{head})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Regressions()) != 1 || r.Regressions()[0].Explain == nil {
			b.Fatalf("want one explained regression, got %d", len(r.Regressions()))
		}
	}
	stop()
}

// In every mode the graph's root holds the whole profile in the report's
// unit: a share of 1, the time of a run in nanoseconds, or multiples of
// the anchor's time.
func TestHTMLFlameModes(t *testing.T) {
	base := one(loadGlob(t, "../testdata/cli/explain-base.folded")[0])
	head := one(loadGlob(t, "../testdata/cli/explain-head.folded")[0])
	for _, c := range []struct {
		opts         []diff.Option
		unit         string
		bRoot, hRoot float64
	}{
		{nil, "share", 1, 1},
		{[]diff.Option{diff.WithMode(diff.Absolute), diff.WithMetric(diff.Total)}, "ns", 1e10, 1.15e10},
		{[]diff.Option{diff.WithAnchor("handler")}, "x", 1000.0 / 500, 1150.0 / 650},
	} {
		r := compare(t, base, head, c.opts...)
		var b bytes.Buffer
		if err := r.Write(&b, "html"); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		if !strings.Contains(page, `"unit":"`+c.unit+`"`) {
			t.Errorf("%s: unit missing", c.unit)
		}
		d, v := readFlame(t, page)
		if math.Abs(v["bt"][0]/c.bRoot-1) > 1e-6 || math.Abs(v["ht"][0]/c.hRoot-1) > 1e-6 {
			t.Errorf("%s: root %v / %v, want %v / %v", c.unit, v["bt"][0], v["ht"][0], c.bRoot, c.hRoot)
		}
		if len(d.Tested.I) == 0 {
			t.Errorf("%s: no frame tested", c.unit)
		}
	}
	// Operation counts: frames are tested against the minimum change per
	// run, which needs the operations a run did (the report's frames were
	// once judged by an engine without them, and none was tested).
	r := compare(t, base, head, diff.WithOps(1000, 1000))
	var b bytes.Buffer
	if err := r.Write(&b, "html"); err != nil {
		t.Fatal(err)
	}
	if d, _ := readFlame(t, b.String()); len(d.Tested.I) == 0 || !slices.Contains(d.Tested.Sig, 1) {
		t.Errorf("WithOps: %d frames tested, significant %v; want the regressed path significant", len(d.Tested.I), d.Tested.Sig)
	}
}
