package htmlreport

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// build adds folded stacks ("a;b;c") with values to side sd.
func build(b *TreeBuilder, sd int, stacks map[string]float64) {
	for s, v := range stacks {
		var path []int32
		for _, n := range strings.Split(s, ";") {
			path = append(path, b.Name(n))
		}
		b.Add(sd, path, v)
	}
}

// TestTreeHandWorked merges stacks of two sides and checks every frame's
// self and total time, the pre-order and the largest-first order of
// siblings.
func TestTreeHandWorked(t *testing.T) {
	b := NewTreeBuilder("all")
	build(b, 0, map[string]float64{"main;load;parse": 3, "main;render;parse": 3, "main;render": 2, "main;gc": 2})
	build(b, 1, map[string]float64{"main;load;parse": 3, "main;render;parse": 5, "main;render": 2, "main;gc": 2})
	tr := b.Tree(0, nil)
	var got []string
	for _, n := range tr.Nodes {
		got = append(got, strings.Repeat(" ", n.Depth)+n.Name+" "+fmtVals(n))
	}
	want := []string{
		"all 0/10 0/12",
		" main 0/10 0/12",
		"  render 2/5 2/7",
		"   parse 3/3 5/5",
		"  load 0/3 0/3",
		"   parse 3/3 3/3",
		"  gc 2/2 2/2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if tr.Pruned != 0 {
		t.Errorf("pruned %d", tr.Pruned)
	}
}

func fmtVals(n Node) string {
	f := func(v Value) string { return ftoa(v.Self) + "/" + ftoa(v.Total) }
	return f(n.Base) + " " + f(n.Head)
}

func ftoa(v float64) string { b, _ := json.Marshal(v); return string(b) }

// TestTreePrunes keeps the largest frames, sums the children it drops into
// one node per parent when that sum is as large as a kept frame, and keeps
// every kept frame's parent.
func TestTreePrunes(t *testing.T) {
	b := NewTreeBuilder("all")
	stacks := map[string]float64{"main;big": 100}
	for i := range 50 {
		stacks["main;small;f"+string(rune('A'+i%26))+string(rune('a'+i/26))] = 1 // 50 frames of 1 under small
	}
	stacks["main;tiny;x"] = 0.5
	build(b, 1, stacks)
	tr := b.Tree(4, nil) // all, main, big, small: the four largest
	var names []string
	var others *Node
	for i := range tr.Nodes {
		n := &tr.Nodes[i]
		names = append(names, n.Name)
		if n.Others > 0 {
			others = n
		}
	}
	if got := strings.Join(names, ","); got != "all,main,big,small,…" {
		t.Errorf("kept %s, want all,main,big,small and small's children summed", got)
	}
	if others == nil || others.Others != 50 || others.Head.Total != 50 || others.Depth != 3 {
		t.Errorf("summed node %+v, want 50 frames of 50 under small", others)
	}
	// tiny (0.5) and its child are dropped, and main's summed rest (0.5)
	// is smaller than any kept frame: a gap.
	if tr.Pruned != 52 {
		t.Errorf("pruned %d frames, want 50 + tiny + x", tr.Pruned)
	}
	// Widths add up below each frame.
	for i, n := range tr.Nodes {
		var sum float64
		for j := i + 1; j < len(tr.Nodes) && tr.Nodes[j].Depth > n.Depth; j++ {
			if tr.Nodes[j].Depth == n.Depth+1 {
				sum += tr.Nodes[j].Head.Total
			}
		}
		if sum > n.Head.Total+1e-9 {
			t.Errorf("%s: children hold %v > its total %v", n.Name, sum, n.Head.Total)
		}
	}
}

// data extracts the flame graph's JSON from a page.
func data(t *testing.T, page string) map[string]any {
	t.Helper()
	const open = `<script type="application/json" id="hb-data">`
	i := strings.Index(page, open)
	j := strings.Index(page[i:], "</script>")
	if i < 0 || j < 0 {
		t.Fatal("no data in the page")
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(page[i+len(open):i+j]), &d); err != nil {
		t.Fatalf("data: %v", err)
	}
	return d
}

// TestWriteEscapes: names and text that look like markup stay text, in
// the table and in the data the script reads; the page fetches nothing.
func TestWriteEscapes(t *testing.T) {
	evil := `</script><script>alert(1)</script>`
	b := NewTreeBuilder("all")
	build(b, 1, map[string]float64{"main;" + evil: 1, "main;F[go.shape.int]": 2})
	tr := b.Tree(0, nil)
	tr.Unit, tr.Metric = "share", "total"
	var out bytes.Buffer
	err := Write(&out, &Report{Title: "t", Headline: "h <b>", Status: "info", Tree: tr,
		Table: Table{Columns: []string{"function"}, Rows: []Row{{Cells: []string{evil}, Verdict: "unchanged"}}}})
	if err != nil {
		t.Fatal(err)
	}
	page := out.String()
	if strings.Count(page, "<script") != 2 || strings.Contains(page, "alert(1)</script>") {
		t.Errorf("markup in names escaped the page's text:\n%s", page)
	}
	if !strings.Contains(page, "h &lt;b&gt;") {
		t.Error("headline not escaped")
	}
	for _, net := range []string{"http://", "https://", "//cdn", "src=\""} {
		if strings.Contains(strings.ReplaceAll(page, "https://html.spec", ""), net) {
			t.Errorf("page refers to %q: it must work offline", net)
		}
	}
	d := data(t, page)
	names := d["names"].([]any)
	found := false
	for _, n := range names {
		found = found || n == evil
	}
	if !found {
		t.Errorf("names %v lack the original name", names)
	}
	if d["mult"].(float64)*3 != 1e8 {
		t.Errorf("values scaled by %v, want the root (3) at 1e8", d["mult"])
	}
	ht := d["ht"].([]any)
	if math.Abs(ht[0].(float64)-1e8) > 1 {
		t.Errorf("root total %v", ht[0])
	}
}
