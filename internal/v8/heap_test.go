package v8

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// heapKey identifies a function as DevTools' bottom-up view groups nodes:
// name, script, url, line and column of the call frame.
type heapKey struct {
	name, script, url string
	line, col         int64
}

type heapSums struct{ self, total, selfN, totalN int64 }

// bottomUp is an independent computation of DevTools' bottom-up view of a
// sampling heap profile, from the JSON itself (generic maps, recursion):
// a function's self size is the sum of its nodes' selfSize; its total
// size is the size of the subtrees of its outermost nodes (a node with no
// ancestor of the same function), so that recursion counts once. The
// counts are the samples of the samples array at those nodes.
func bottomUp(t *testing.T, data []byte) (map[heapKey]heapSums, int64) {
	t.Helper()
	var f struct {
		Head    map[string]any `json:"head"`
		Samples []struct {
			NodeID float64 `json:"nodeId"`
		} `json:"samples"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	perNode := map[float64]int64{}
	for _, s := range f.Samples {
		perNode[s.NodeID]++
	}
	out := map[heapKey]heapSums{}
	var all int64
	var walk func(n map[string]any, open map[heapKey]int) (size, count int64)
	walk = func(n map[string]any, open map[heapKey]int) (int64, int64) {
		cf := n["callFrame"].(map[string]any)
		name := cf["functionName"].(string)
		if name == "" {
			name = "(anonymous)"
		}
		k := heapKey{name, fmt.Sprint(cf["scriptId"]), cf["url"].(string), int64(cf["lineNumber"].(float64)), int64(cf["columnNumber"].(float64))}
		self := int64(n["selfSize"].(float64))
		selfN := perNode[n["id"].(float64)]
		all += self
		size, count := self, selfN
		open[k]++
		for _, c := range n["children"].([]any) {
			s, c := walk(c.(map[string]any), open)
			size += s
			count += c
		}
		open[k]--
		r := out[k]
		r.self += self
		r.selfN += selfN
		if open[k] == 0 {
			r.total += size
			r.totalN += count
		}
		out[k] = r
		return size, count
	}
	walk(f.Head, map[heapKey]int{})
	return out, all
}

// checkBottomUp holds ParseHeap and analysis to bottomUp, function by
// function: bytes self and total, and the sampled allocations behind them.
func checkBottomUp(t *testing.T, path string) *analysis.Table {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseHeap(bytes.NewReader(data), pbuild.Options{Name: path})
	if err != nil {
		t.Fatal(err)
	}
	testutil.CheckProfile(t, path, p)
	tb := table(t, p)
	if tb.Unit != analysis.UnitBytes || tb.SampleType != "space/bytes" {
		t.Fatalf("%s: unit %s, type %s; want space/bytes", path, tb.Unit, tb.SampleType)
	}
	want, all := bottomUp(t, data)
	if int64(tb.Total) != all {
		t.Errorf("%s: total %d bytes, the file's selfSize add up to %d", path, int64(tb.Total), all)
	}
	seen := map[heapKey]bool{}
	for _, f := range tb.Functions {
		var k heapKey
		for wk := range want {
			if wk.name == f.Name && wk.url == f.File && oneBased(wk.line) == f.Line && oneBased(wk.col) == f.Column && !seen[wk] {
				if f.Key.SystemName == FrameOf(CallFrame{FunctionName: wk.name, ScriptID: wk.script, URL: wk.url, LineNumber: wk.line, ColumnNumber: wk.col}).SystemName ||
					wk.name == "(anonymous)" && f.Key.SystemName == FrameOf(CallFrame{ScriptID: wk.script, URL: wk.url, LineNumber: wk.line, ColumnNumber: wk.col}).SystemName {
					k = wk
				}
			}
		}
		if k == (heapKey{}) {
			t.Errorf("%s: we have %s (%s), the file has no such function", path, f.Name, f.Key.SystemName)
			continue
		}
		seen[k] = true
		w := want[k]
		got := heapSums{int64(f.Self), int64(f.Total), f.SelfSamples, f.TotalSamples}
		if got != w {
			t.Errorf("%s: %s: self/total %d/%d bytes (%d/%d samples), DevTools' bottom-up says %d/%d (%d/%d)",
				path, f.Name, got.self, got.total, got.selfN, got.totalN, w.self, w.total, w.selfN, w.totalN)
		}
	}
	for k, w := range want {
		if !seen[k] && k.name != RootName && (w.self != 0 || w.total != 0) {
			t.Errorf("%s: the file has %v with %+v, we do not", path, k, w)
		}
	}
	return tb
}

// TestHeapHandWorked: a tree worked out by hand.
//
//	(root) 0 → main 10 → a 20 → a 30
//	              ↘ b 5
//
// a: self 50, total 50 (its recursion once); main: self 10, total 65;
// b 5/5. Samples: two at the inner a, one at b, one at main.
func TestHeapHandWorked(t *testing.T) {
	const src = `{"head":{"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"selfSize":0,"id":1,"children":[
	 {"callFrame":{"functionName":"main","scriptId":"7","url":"file:///m.js","lineNumber":0,"columnNumber":0},"selfSize":10,"id":2,"children":[
	  {"callFrame":{"functionName":"a","scriptId":"7","url":"file:///m.js","lineNumber":4,"columnNumber":10},"selfSize":20,"id":3,"children":[
	   {"callFrame":{"functionName":"a","scriptId":"7","url":"file:///m.js","lineNumber":4,"columnNumber":10},"selfSize":30,"id":4,"children":[]}]},
	  {"callFrame":{"functionName":"b","scriptId":"7","url":"file:///m.js","lineNumber":9,"columnNumber":2},"selfSize":5,"id":5,"children":[]}]}]},
	"samples":[{"size":16,"nodeId":4,"ordinal":1},{"size":16,"nodeId":4,"ordinal":2},{"size":5,"nodeId":5,"ordinal":3},{"size":10,"nodeId":2,"ordinal":4}]}`
	p, err := ParseHeap(strings.NewReader(src), pbuild.Options{Name: "Heap.20261124.030722.6207.0.001.heapprofile"})
	if err != nil {
		t.Fatal(err)
	}
	tb := table(t, p)
	for _, w := range []struct {
		name              string
		self, total, n, N int64
	}{{"a", 50, 50, 2, 2}, {"main", 10, 65, 1, 4}, {"b", 5, 5, 1, 1}} {
		f := find(t, tb, w.name, 0)
		if int64(f.Self) != w.self || int64(f.Total) != w.total || f.SelfSamples != w.n || f.TotalSamples != w.N {
			t.Errorf("%s: %d/%d bytes, %d/%d samples; want %d/%d, %d/%d", w.name, int64(f.Self), int64(f.Total), f.SelfSamples, f.TotalSamples, w.self, w.total, w.n, w.N)
		}
	}
	if tb.Total != 65 || tb.TotalSamples != 4 || tb.Format(tb.Total) != "65B" {
		t.Errorf("total %d bytes (%s), %d samples; want 65B, 4", int64(tb.Total), tb.Format(tb.Total), tb.TotalSamples)
	}
	if got := p.Sample[0].Label[pbuild.LabelPID]; len(got) != 1 || got[0] != "6207" {
		t.Errorf("pid label from Node's file name: %v", got)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "hand.heapprofile")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	checkBottomUp(t, path)
}

func TestHeapErrors(t *testing.T) {
	node := func(id int, size string, children string) string {
		return fmt.Sprintf(`{"callFrame":{"functionName":"f%d","scriptId":"1","url":"","lineNumber":1,"columnNumber":1},"selfSize":%s,"id":%d,"children":[%s]}`, id, size, id, children)
	}
	for _, c := range []struct{ in, want string }{
		{`{"samples":[]}`, "no head node"},
		{`{"head":` + node(1, "-5", "") + `}`, "node 1: selfSize: negative (-5)"},
		{`{"head":` + node(1, "1.5", "") + `}`, "node 1: selfSize: 1.5 is not a whole number of bytes"},
		{`{"head":` + node(1, "1e30", "") + `}`, "not a whole number of bytes"},
		{`{"head":` + node(1, "1", node(1, "2", "")) + `}`, "duplicate node id 1"},
		{`{"head":` + node(1, "1", "") + `,"samples":[{"size":-1,"nodeId":1}]}`, "samples[0]: size: negative (-1)"},
		{`{"head":` + node(1, `"x"`, "") + `}`, "heap profile"},
		{`{"head":` + strings.Repeat(`{"children":[`, 20000), "heap profile"},
	} {
		_, err := ParseHeap(strings.NewReader(c.in), pbuild.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: err = %v, want %q", c.in, err, c.want)
		}
	}
	// Samples naming nodes the tree lacks (Node writes such files) are
	// dropped with a warning, not an error.
	p, err := ParseHeap(strings.NewReader(`{"head":`+node(1, "8", "")+`,"samples":[{"size":8,"nodeId":1},{"size":8,"nodeId":99}]}`), pbuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := pbuild.Warnings(p); len(w) != 1 || !strings.Contains(w[0], "not in the tree") {
		t.Errorf("warnings %q", w)
	}
}

// TestHeapCommitted checks the real profile in testdata (node --heap-prof
// of testdata/heap/alloc.js) against the independent bottom-up sums.
func TestHeapCommitted(t *testing.T) {
	tb := checkBottomUp(t, "testdata/alloc.heapprofile")
	for _, name := range []string{"makeRecord", "makeBuffer", "build"} {
		if f := find(t, tb, name, 0); f.Total <= 0 {
			t.Errorf("%s: no bytes", name)
		}
	}
}

// TestRealNodeHeapProfile records a sampling heap profile of a small
// program with node --heap-prof now and checks it against the independent
// bottom-up sums; the program's own functions must hold most of the bytes.
func TestRealNodeHeapProfile(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to produce a real .heapprofile and is not on PATH: %v", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(node, "--heap-prof", "--heap-prof-interval=8192", "--heap-prof-dir", dir, "../../testdata/heap/alloc.js", "20000")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "Heap.*.heapprofile"))
	if len(files) != 1 {
		t.Fatalf("node wrote %v, want one Heap.*.heapprofile", files)
	}
	tb := checkBottomUp(t, files[0])
	build := find(t, tb, "build", 0)
	if build.TotalShare < 0.8 {
		t.Errorf("build holds %.0f%% of the live bytes, want most: %+v", 100*build.TotalShare, tb.Functions[:min(5, len(tb.Functions))])
	}
	for _, name := range []string{"makeRecord", "makeBuffer"} {
		if f := find(t, tb, name, 0); f.Self <= 0 || f.SelfSamples <= 0 {
			t.Errorf("%s: %d bytes, %d samples; want some", name, int64(f.Self), f.SelfSamples)
		}
	}
}

// FuzzParseHeap: any input gives a valid profile or an error, never a
// panic or hang; a profile it gives can be analysed, and its self values
// add up.
func FuzzParseHeap(f *testing.F) {
	seed, err := os.ReadFile("testdata/alloc.heapprofile")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"head":{"callFrame":{"functionName":"(root)"},"selfSize":0,"id":1,"children":[{"callFrame":{"functionName":"a","scriptId":2},"selfSize":64,"id":2,"children":[]}]},"samples":[{"size":64,"nodeId":2,"ordinal":1}]}`))
	f.Add([]byte(`{"profile":{"head":{"callFrame":{"functionName":"(root)"},"selfSize":8,"id":1,"children":[]},"samples":[]}}`))
	f.Add([]byte(`{"head":{"callFrame":{"functionName":"x"},"selfSize":1,"id":1,"children":[{"callFrame":{"functionName":"x"},"selfSize":2,"id":1}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseHeap(bytes.NewReader(data), pbuild.Options{Name: "Heap.20261124.030722.6207.0.001.heapprofile"})
		if err != nil {
			if p != nil {
				t.Fatal("profile and error")
			}
			return
		}
		testutil.CheckProfile(t, "parsed heap profile", p)
		if _, err := analysis.Functions(p); err != nil {
			t.Fatalf("analysis of a parsed heap profile: %v", err)
		}
	})
}
