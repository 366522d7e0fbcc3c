package loaders_test

import (
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/loaders"
)

// TestHeapProfiles: V8 sampling heap profiles are told from CPU profiles
// by their content (a head node with selfSize), and load as bytes; Go heap
// profiles load with their four sample types.
func TestHeapProfiles(t *testing.T) {
	for _, c := range []struct {
		in   string
		want loaders.Format
	}{
		{`{"head":{"callFrame":{"functionName":"(root)"},"selfSize":0,"id":1,"children":[]},"samples":[]}`, loaders.FormatHeapProfile},
		{`{"head":{"callFrame":{"functionName":"(root)","url":"` + strings.Repeat("x", 300) + `"},"id":1,"selfSize":0,"children":[]}}`, loaders.FormatHeapProfile},
		{`{"samples":[],"head":{"selfSize":0}}`, loaders.FormatHeapProfile},
		{`{"head":{"functionName":"(root)","hitCount":0,"children":[]},"timestamps":[]}`, loaders.FormatCPUProfile},
		{`{"head":{"children":[],"hitCount":1}}`, loaders.FormatCPUProfile},
	} {
		if got := loaders.Detect([]byte(c.in)); got != c.want {
			t.Errorf("Detect(%.50s) = %q, want %q", c.in, got, c.want)
		}
	}
	p, err := loaders.Load("../internal/v8/testdata/alloc.heapprofile")
	if err != nil {
		t.Fatal(err)
	}
	if f, err := loaders.DetectFile("../internal/v8/testdata/alloc.heapprofile"); f != loaders.FormatHeapProfile || err != nil {
		t.Errorf("format %q, %v", f, err)
	}
	tab, err := analysis.Functions(p)
	if err != nil || tab.Unit != analysis.UnitBytes {
		t.Fatalf("table %+v, %v: want bytes", tab, err)
	}
	g, err := loaders.Load("../testdata/heap/heap.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, st := range g.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	if got := strings.Join(types, " "); got != "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes" {
		t.Errorf("Go heap profile types %s", got)
	}
}
