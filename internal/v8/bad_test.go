package v8

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/pbuild"
)

const rootFrame = `"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1}`

func fn(name string) string {
	return fmt.Sprintf(`"callFrame":{"functionName":%q,"scriptId":"1","url":"f.js","lineNumber":1,"columnNumber":1}`, name)
}

// TestBadInput: every broken input gives an error (or, where the data can be
// used, a warning) that names the problem; none panics or hangs.
func TestBadInput(t *testing.T) {
	ok2 := `{"id":1,` + rootFrame + `,"children":[2]},{"id":2,` + fn("f") + `}`
	tests := []struct {
		name, in string
		err      string // substring of the error; "" when loading must succeed
		warning  string // substring of a warning, when err is ""
	}{
		{"empty input", "", "empty input", ""},
		{"only spaces", "  \n", "empty input", ""},
		{"invalid JSON", `{"nodes" 1}`, "invalid JSON at offset", ""},
		{"not an object", `[1,2]`, "want a JSON object", ""},
		{"truncated in nodes", `{"nodes":[{"id":1,` + rootFrame, "unexpected end of input", ""},
		{"truncated after nodes", `{"nodes":[` + ok2 + `],"samples":[1,2`, "unexpected end of input", ""},
		{"truncated before closing brace", `{"nodes":[` + ok2 + `]`, "unexpected end of input", ""},
		{"no nodes", `{"startTime":1}`, "no nodes", ""},
		{"nodes not an array", `{"nodes":{}}`, "want '[' to start nodes", ""},
		{"node without id", `{"nodes":[{` + rootFrame + `}]}`, "nodes[0] at offset 10 has no id", ""},
		{"node id not a number", `{"nodes":[{"id":"x",` + rootFrame + `}]}`, "nodes[0]", ""},
		{"scriptId an object", `{"nodes":[{"id":1,"callFrame":{"scriptId":{}}}]}`, "scriptId", ""},
		{"sample id with no node", `{"nodes":[` + ok2 + `],"samples":[2,9,2],"timeDeltas":[0,1,1]}`, "", "sample 1 names unknown node 9: dropped"},
		{"samples/timeDeltas length mismatch", `{"nodes":[` + ok2 + `],"samples":[2,2],"timeDeltas":[0]}`, "samples and timeDeltas have different lengths (2 and 1)", ""},
		{"samples without timeDeltas", `{"nodes":[` + ok2 + `],"samples":[2]}`, "different lengths (1 and 0)", ""},
		{"timeDeltas without samples", `{"nodes":[` + ok2 + `],"timeDeltas":[1]}`, "different lengths (0 and 1)", ""},
		{"cycle without root", `{"nodes":[{"id":1,` + fn("a") + `,"children":[2]},{"id":2,` + fn("b") + `,"children":[1]}]}`, "no root", ""},
		{"cycle beside the root", `{"nodes":[{"id":1,` + rootFrame + `},{"id":2,` + fn("a") + `,"parent":3},{"id":3,` + fn("b") + `,"parent":2}]}`, "cycle: node", ""},
		{"own child", `{"nodes":[{"id":1,` + rootFrame + `,"children":[1]}]}`, "node 1 is its own child", ""},
		{"own parent", `{"nodes":[{"id":1,` + rootFrame + `},{"id":2,` + fn("a") + `,"parent":2}]}`, "node 2 is its own parent", ""},
		{"two roots", `{"nodes":[{"id":1,` + rootFrame + `},{"id":2,` + fn("a") + `}]}`, "two roots: nodes 1 and 2", ""},
		{"unknown child", `{"nodes":[{"id":1,` + rootFrame + `,"children":[5]}]}`, "node 1 lists unknown child 5", ""},
		{"unknown parent", `{"nodes":[{"id":1,` + rootFrame + `},{"id":2,` + fn("a") + `,"parent":7}]}`, "node 2 has unknown parent 7", ""},
		{"duplicate id", `{"nodes":[{"id":1,` + rootFrame + `},{"id":1,` + fn("a") + `}]}`, "duplicate node id 1", ""},
		{"child of two nodes", `{"nodes":[{"id":1,` + rootFrame + `,"children":[2,3]},{"id":2,` + fn("a") + `,"children":[3]},{"id":3,` + fn("b") + `}]}`, "node 3 is a child of both node 1 and node 2", ""},
		{"duplicate links are fine", `{"nodes":[{"id":1,` + rootFrame + `,"children":[2,2]},{"id":2,` + fn("a") + `,"parent":1}],"samples":[2],"timeDeltas":[0],"endTime":5}`, "", ""},
		{"huge timeDelta", `{"nodes":[` + ok2 + `],"samples":[2],"timeDeltas":[1e30]}`, "timeDeltas at offset", ""},
		{"fractional timeDelta", `{"nodes":[` + ok2 + `],"samples":[2],"timeDeltas":[1.5]}`, "want integers", ""},
		{"huge sample id", `{"nodes":[` + ok2 + `],"samples":[99999999999999999999],"timeDeltas":[0]}`, "samples at offset", ""},
		{"huge startTime", `{"nodes":[` + ok2 + `],"startTime":1e300}`, "startTime at offset", ""},
		{"time overflow", `{"nodes":[` + ok2 + `],"startTime":9223372036854775000,"samples":[2,2],"timeDeltas":[0,1000]}`, "sample 1: time overflows", ""},
		{"span too long", `{"nodes":[` + ok2 + `],"samples":[2,2],"timeDeltas":[-9000000000000000000,9000000000000000000]}`, "too long", ""},
		{"negative hitCount", `{"nodes":[{"id":1,` + rootFrame + `,"hitCount":-1}]}`, "negative hitCount", ""},
		{"samples twice", `{"nodes":[` + ok2 + `],"samples":[2],"samples":[2],"timeDeltas":[0]}`, "a second samples key", ""},
		{"nodes twice", `{"nodes":[` + ok2 + `],"nodes":[]}`, "second nodes", ""},
		{"legacy node without id", `{"head":{"functionName":"(root)","children":[{"functionName":"a","id":2,"children":[]}]},"samples":[],"timestamps":[]}`, "has no id", ""},
		{"legacy children not an array", `{"head":{"id":1,"children":{}}}`, "want '[' to start children", ""},
		{"legacy child not an object", `{"head":{"id":1,"children":[1]}}`, "want '{' (a child node)", ""},
		{"legacy truncated", `{"head":{"id":1,"children":[{"id":2,"children":[`, "unexpected end of input", ""},
		{"legacy timestamps mismatch", `{"head":{"id":1,"functionName":"(root)","children":[{"id":2,"functionName":"a"}]},"samples":[2,2],"timestamps":[5]}`, "samples and timestamps have different lengths (2 and 1)", ""},
		{"legacy id after children", `{"head":{"functionName":"(root)","children":[{"functionName":"a","children":[],"id":2}],"id":1},"samples":[2],"timestamps":[5,10]}`, "", "legacy"},
		{"sample of the root only", `{"nodes":[{"id":1,` + rootFrame + `}],"samples":[1],"timeDeltas":[0]}`, "", "single sample"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(strings.NewReader(tt.in), pbuild.Options{})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tt.warning != "" {
				checkWarning(t, p, tt.warning)
			}
		})
	}
}

// deepChain returns a modern profile whose tree is one chain of depth nodes
// below (root), with samples at the leaf, the middle and the root.
func deepChain(depth int, parentLinks bool) string {
	var sb strings.Builder
	sb.WriteString(`{"nodes":[{"id":1,` + rootFrame)
	if !parentLinks {
		sb.WriteString(`,"children":[2]`)
	}
	sb.WriteString("}")
	for i := 2; i <= depth+1; i++ {
		fmt.Fprintf(&sb, `,{"id":%d,"callFrame":{"functionName":"f%d","scriptId":"1","url":"deep.js","lineNumber":%d,"columnNumber":0}`, i, i, i)
		if parentLinks {
			fmt.Fprintf(&sb, `,"parent":%d`, i-1)
		} else if i <= depth {
			fmt.Fprintf(&sb, `,"children":[%d]`, i+1)
		}
		sb.WriteString("}")
	}
	fmt.Fprintf(&sb, `],"startTime":0,"endTime":40,"samples":[%d,%d,1],"timeDeltas":[0,10,10]}`, depth+1, depth/2)
	return sb.String()
}

// deepLegacy nests depth nodes in a legacy head tree.
func deepLegacy(depth int) string {
	var sb strings.Builder
	sb.WriteString(`{"head":{"functionName":"(root)","id":1,"children":[`)
	for i := 2; i <= depth+1; i++ {
		fmt.Fprintf(&sb, `{"functionName":"f%d","url":"deep.js","lineNumber":%d,"id":%d,"children":[`, i, i, i)
	}
	for i := 2; i <= depth+1; i++ {
		sb.WriteString("]}")
	}
	fmt.Fprintf(&sb, `]},"startTime":0,"endTime":0,"samples":[%d,1],"timestamps":[10,20,30]}`, depth+1)
	return sb.String()
}

// TestDeepStack: a 100,000-deep call chain loads (no recursion over depth).
// Its speed is BenchmarkParse's business, not a timed test's.
func TestDeepStack(t *testing.T) {
	const depth = 100_000
	for _, tt := range []struct{ name, in string }{
		{"children links", deepChain(depth, false)},
		{"parent links", deepChain(depth, true)},
		{"legacy nesting", deepLegacy(depth)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(strings.NewReader(tt.in), pbuild.Options{})
			if err != nil {
				t.Fatal(err)
			}
			maxDepth := 0
			for _, s := range p.Sample {
				maxDepth = max(maxDepth, len(s.Location))
			}
			if maxDepth != depth {
				t.Errorf("deepest stack has %d frames, want %d", maxDepth, depth)
			}
			tb := table(t, p)
			leaf := find(t, tb, fmt.Sprintf("f%d", depth+1), 0)
			if leaf.Self != int64(10*us) || find(t, tb, "f2", 0).Total < int64(10*us) {
				t.Errorf("leaf self %v, f2 total %v", leaf.Self, find(t, tb, "f2", 0).Total)
			}
		})
	}
}

// TestBuildDoesNotModify: Build leaves the caller's profile alone, and an
// empty profile builds nothing without error (chrometrace may pass one).
func TestBuildDoesNotModify(t *testing.T) {
	p := &Profile{
		Nodes: []Node{
			{ID: 5, CallFrame: CallFrame{FunctionName: "(root)"}, Children: []int64{6}},
			{ID: 6, Parent: 5, HasParent: true, CallFrame: CallFrame{FunctionName: "g", LineNumber: -1, ColumnNumber: -1}},
		},
		StartTime: 10, Samples: []int64{6, 6, 5}, TimeDeltas: []int64{0, 3, -1},
	}
	before := fmt.Sprintf("%+v", *p)
	b := pbuild.New(pbuild.Sampled)
	span, err := Build(b, p, pbuild.NewLabels(pbuild.LabelTID, "7"))
	if err != nil {
		t.Fatal(err)
	}
	if after := fmt.Sprintf("%+v", *p); after != before {
		t.Errorf("Build changed its input:\n%s\n%s", before, after)
	}
	// times 10, 13, 12 → sorted 10 (6), 12 (5), 13 (6); durations 2, 1, 1.5 µs.
	if span.Start != 10 || span.Samples != 3 || span.Nanos != 4500 || span.Period != 2000 {
		t.Errorf("span %+v, want start 10, 3 samples, 4500 ns, period 2000 ns (upper median)", span)
	}
	if _, err := Build(pbuild.New(pbuild.Sampled), &Profile{}, nil); err != nil {
		t.Errorf("empty profile: %v", err)
	}
}

// TestBuildPerNode: summed samples are checked like Build's: the counts
// must fit the nodes and the tree must be sound.
func TestBuildPerNode(t *testing.T) {
	nodes := []Node{
		{ID: 1, CallFrame: CallFrame{FunctionName: "(root)"}, Children: []int64{2}},
		{ID: 2, CallFrame: CallFrame{FunctionName: "g", LineNumber: -1, ColumnNumber: -1}},
	}
	b := pbuild.New(pbuild.Sampled)
	if err := BuildPerNode(b, nodes, []int64{0, 3}, []int64{0, 3000}, nil); err != nil {
		t.Fatal(err)
	}
	p, err := b.Finish("test", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != 1 || p.Sample[0].Value[0] != 3 || p.Sample[0].Value[1] != 3000 ||
		len(p.Sample[0].Location) != 1 || p.Sample[0].Location[0].Line[0].Function.Name != "g" {
		t.Errorf("samples %v", p.Sample)
	}
	if err := BuildPerNode(pbuild.New(pbuild.Sampled), nodes, []int64{1}, []int64{1, 2}, nil); err == nil || !strings.Contains(err.Error(), "2 nodes but 1 counts and 2 times") {
		t.Errorf("length mismatch: %v", err)
	}
	cycle := []Node{{ID: 1, Children: []int64{2}}, {ID: 2, Children: []int64{1}}}
	if err := BuildPerNode(pbuild.New(pbuild.Sampled), cycle, []int64{1, 1}, []int64{1, 1}, nil); err == nil {
		t.Error("a cyclic tree was accepted")
	}
}

// TestSortByTime: samples far out of order (past the insertion sort's
// budget) are sorted by time, equal times in file order.
func TestSortByTime(t *testing.T) {
	const n = 5000
	ts := make([]timedSample, n)
	for i := range ts {
		ts[i] = timedSample{t: int64((n - i) / 2), idx: int32(i)} // backwards, in pairs
	}
	sortByTime(ts)
	for i := 1; i < n; i++ {
		if a, b := ts[i-1], ts[i]; b.t < a.t || b.t == a.t && b.idx < a.idx {
			t.Fatalf("samples %d and %d out of order: %+v, %+v", i-1, i, a, b)
		}
	}
}
