package analysis_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/loaders"
)

// heapTypes are the sample types of a Go heap profile, and how each is
// named by index as well.
var heapTypes = []struct{ name, index, unit string }{
	{"alloc_objects", "0", analysis.UnitCount},
	{"alloc_space", "1", analysis.UnitBytes},
	{"inuse_objects", "2", analysis.UnitCount},
	{"inuse_space", "3", analysis.UnitBytes},
}

// compareHeapWithPprof checks every function of the profile at path, for
// every sample type by name and by index and for the default, against
// `go tool pprof -top -sample_index`.
func compareHeapWithPprof(t *testing.T, path, defaultType string) {
	t.Helper()
	p, err := loaders.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	x, err := analysis.NewIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, ty := range heapTypes {
		want := testutil.PprofTopIndex(t, path, ty.name)
		for _, sel := range []string{ty.name, ty.index} {
			tab, err := x.Table(analysis.Selection{SampleType: sel})
			if err != nil {
				t.Fatalf("%s: %v", sel, err)
			}
			if tab.Unit != ty.unit || tab.SampleType != ty.name+"/"+map[string]string{"count": "count", "bytes": "bytes"}[ty.unit] {
				t.Errorf("%s: unit %q, type %q; want %q of %s", sel, tab.Unit, tab.SampleType, ty.unit, ty.name)
			}
			got := map[string][2]int64{}
			for _, f := range tab.Functions {
				g := got[f.Name]
				got[f.Name] = [2]int64{g[0] + int64(f.Self), g[1] + int64(f.Total)}
			}
			for name, w := range want {
				if g := got[name]; g != w {
					t.Errorf("%s -sample_index=%s: %s: self/total %d/%d, pprof says %d/%d", filepath.Base(path), sel, name, g[0], g[1], w[0], w[1])
				}
			}
			for name, g := range got {
				if _, ok := want[name]; !ok && g != [2]int64{} {
					t.Errorf("%s -sample_index=%s: we have %s (%d/%d), pprof does not", filepath.Base(path), sel, name, g[0], g[1])
				}
			}
		}
	}
	def, err := x.Table()
	if err != nil {
		t.Fatal(err)
	}
	if def.SampleType != defaultType {
		t.Errorf("%s: default sample type %s, want %s (pprof's default)", filepath.Base(path), def.SampleType, defaultType)
	}
}

// TestHeapMatchesPprofTop holds the four sample types of real heap and
// allocation profiles to `go tool pprof -top -sample_index`: the committed
// one, and profiles heapgen writes now at the runtime's default rate and
// with every allocation recorded (runtime.MemProfileRate = 1).
func TestHeapMatchesPprofTop(t *testing.T) {
	compareHeapWithPprof(t, "../testdata/heap/heap.pb.gz", "inuse_space/bytes")
	run := testutil.Heapgen(t, "..")
	compareHeapWithPprof(t, run("-profile", "allocs", "-rate", "1", "-n", "20000"), "alloc_space/bytes")
	compareHeapWithPprof(t, run("-profile", "heap", "-n", "200000"), "inuse_space/bytes")
}

// TestHeapSampleCounts checks the count behind a heap profile's values:
// with every allocation recorded it is the number of objects; at the
// default rate it is the number of allocations the runtime sampled, which
// for R bytes allocated is a Poisson count of mean about R/512KiB. The
// runtime's estimate (alloc_objects) is far larger, and taken as the count
// it would make diff's noise model trust a sampled profile far too much.
func TestHeapSampleCounts(t *testing.T) {
	run := testutil.Heapgen(t, "..")
	exact := loadHeap(t, run("-profile", "allocs", "-rate", "1", "-n", "20000"), "alloc_objects")
	for _, f := range exact.Functions {
		if int64(f.Self) != f.SelfSamples || int64(f.Total) != f.TotalSamples {
			t.Errorf("rate 1: %s: %d/%d objects but %d/%d samples", f.Name, int64(f.Self), int64(f.Total), f.SelfSamples, f.TotalSamples)
		}
	}
	// 20000 records, and the few times append grows the slice of kept ones.
	if rows := exact.Find("main.newRecord"); len(rows) != 1 || int64(rows[0].Self) < 20000 || int64(rows[0].Self) > 20040 {
		t.Errorf("rate 1: newRecord should allocate 20000 records and a few slices, got %+v", rows)
	}
	sampled := loadHeap(t, run("-profile", "allocs", "-n", "200000"), "alloc_space")
	mean := float64(sampled.Total) / (512 << 10)
	if n := float64(sampled.TotalSamples); math.Abs(n-mean) > 5*math.Sqrt(mean)+2 {
		t.Errorf("default rate: %d sampled allocations for %s allocated, want about %.0f", sampled.TotalSamples, sampled.Format(sampled.Total), mean)
	}
	objects := loadHeap(t, run("-profile", "allocs", "-n", "200000"), "alloc_objects")
	if objects.Total < 10*objects.TotalSamples {
		t.Errorf("default rate: %d objects estimated from %d samples: the count should be the samples, far fewer", objects.Total, objects.TotalSamples)
	}
}

func loadHeap(t *testing.T, path, sampleType string) *analysis.Table {
	t.Helper()
	p, err := loaders.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := analysis.Functions(p, analysis.Selection{SampleType: sampleType})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}
