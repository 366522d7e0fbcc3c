package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
)

func TestGoldenTopHeap(t *testing.T) {
	heap := "testdata/heap/heap.pb.gz"
	checkGolden(t, []cliCase{
		{name: "top-heap-text", why: "a Go heap profile in bytes: inuse_space, pprof's default", args: []string{"top", heap}},
		{name: "top-heap-objects-markdown", why: "--sample-index by name: objects as counts, in Markdown", args: []string{"top", "--sample-index", "alloc_objects", "--format", "markdown", heap}},
		{name: "top-heap-index-json", why: "--sample-index by index (1 is alloc_space); JSON keys say bytes", args: []string{"top", "-n", "3", "--sample-index", "1", "--format", "json", heap}},
		{name: "top-heap-bad-index", why: "an unknown sample type lists the profile's", args: []string{"top", "--sample-index", "cpu", heap}},
	})
}

// TestTopSampleIndexMatchesPprof: `hotbudget top --sample-index X` equals
// `go tool pprof -top -sample_index=X` for the four sample types of real
// Go heap profiles, read from the JSON report: the committed one (sampled
// at the runtime's default rate) and one heapgen writes now with every
// allocation recorded.
func TestTopSampleIndexMatchesPprof(t *testing.T) {
	run := testutil.Heapgen(t, repoRoot)
	fresh := run("-profile", "allocs", "-rate", "1", "-n", "5000")
	for _, path := range []string{filepath.Join(repoRoot, "testdata/heap/heap.pb.gz"), fresh} {
		for _, st := range []struct{ name, unit string }{
			{"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"},
		} {
			r := runCLI(t, cliCase{args: []string{"top", "-n", "0", "--format", "json", "--sample-index", st.name, path}})
			if r.code != 0 {
				t.Fatalf("top %s: exit %d: %s", st.name, r.code, r.stderr)
			}
			var out struct {
				Unit      string `json:"unit"`
				Functions []map[string]any
			}
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
				t.Fatal(err)
			}
			if out.Unit != st.unit {
				t.Errorf("%s: unit %q, want %q", st.name, out.Unit, st.unit)
			}
			got := map[string][2]int64{}
			for _, f := range out.Functions {
				name := f["name"].(string)
				self, okS := f["self"].(float64)
				total, okT := f["total"].(float64)
				if !okS || !okT || f["self_ns"] != nil || f["self_"+st.unit] != nil {
					t.Fatalf("%s: row %v lacks self/total or names a unit in a key", st.name, f)
				}
				g := got[name]
				got[name] = [2]int64{g[0] + int64(self), g[1] + int64(total)}
			}
			want := testutil.PprofTopIndex(t, path, st.name)
			for name, w := range want {
				if got[name] != w {
					t.Errorf("%s %s: %s: self/total %v, go tool pprof -top says %v", filepath.Base(path), st.name, name, got[name], w)
				}
			}
			for name, g := range got {
				if _, ok := want[name]; !ok && g != [2]int64{} {
					t.Errorf("%s %s: we list %s (%v), pprof does not", filepath.Base(path), st.name, name, g)
				}
			}
		}
	}
}

func TestGoldenCheckHeap(t *testing.T) {
	checkGolden(t, []cliCase{
		{name: "check-heap", why: "allocation limits on a real Go heap profile, in bytes and objects", args: []string{"check", "--budget", "testdata/budget/heap.yaml", "testdata/heap/heap.pb.gz"}},
		{name: "check-heap-json", why: "allocation limits in JSON: unit bytes or objects", args: []string{"check", "--format", "json", "--budget", "testdata/budget/heap.yaml", "testdata/heap/heap.pb.gz"}},
		{name: "check-heap-cpu", why: "an allocation limit on a CPU profile is an input error naming its sample types", args: []string{"check", "--budget", "testdata/budget/heap.yaml", "testdata/pprof/busy.pb.gz"}},
		{name: "check-heap-inuse", why: "--sample-index applies to every rule that names none: a type in bytes for an objects limit is an input error naming both", args: []string{"check", "--sample-index", "inuse_space", "--budget", "testdata/budget/heap.yaml", "testdata/heap/heap.pb.gz"}},
	})
}
