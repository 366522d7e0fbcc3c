package perfassert_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/limits"
	"github.com/hotbudget/hotbudget/loaders"
	"github.com/hotbudget/hotbudget/perfassert"
)

// TestAllocLimits bounds allocations on a real heap profile written with
// every allocation recorded (runtime.MemProfileRate = 1) by
// testdata/heap/gen: 2000 records of 48 bytes in newRecord (and the few
// slices append grows, 16 when -n is 2000), one 256-byte buffer per record
// in encode, work allocating nothing itself.
func TestAllocLimits(t *testing.T) {
	run := testutil.Heapgen(t, "..")
	p, err := loaders.Load(run("-profile", "allocs", "-rate", "1", "-n", "2000"))
	if err != nil {
		t.Fatal(err)
	}
	tab, err := analysis.Functions(p, analysis.Selection{SampleType: "alloc_objects"})
	if err != nil {
		t.Fatal(err)
	}
	enc := tab.Find("main.encode")
	if len(enc) != 1 || int64(enc[0].Self) != 2000 {
		t.Fatalf("encode: %+v, want 2000 objects", enc)
	}
	for _, c := range []struct {
		q     limits.Quantity
		fn    string
		limit int64
		pass  bool
		text  string
	}{
		{limits.SelfAllocs, "main.encode", 2000, true, "main.encode self allocations 2000 ("},
		{limits.SelfAllocs, "main.encode", 1999, false, "want at most 1999 objects"},
		{limits.SelfAllocBytes, "main.encode", 2000 * 256, true, "main.encode self allocated bytes 500KiB ("},
		{limits.SelfAllocBytes, "main.encode", 2000*256 - 1, false, "want at most 500KiB"},
		{limits.SelfAllocs, "main.work", 0, true, "main.work self allocations 0 ("},
		{limits.TotalAllocs, "main.work", 4000, false, "main.work total allocations"},
	} {
		r, err := limits.Check(p, c.fn, limits.Limit{Quantity: c.q, Count: c.limit})
		if err != nil {
			t.Fatalf("%s %s: %v", c.q, c.fn, err)
		}
		if r.Passed != c.pass || !strings.Contains(r.String(), c.text) || strings.Contains(r.Summary(), "ms") {
			t.Errorf("%s %s <= %d: passed %v, want %v; text:\n%s", c.q, c.fn, c.limit, r.Passed, c.pass, r)
		}
	}
	ft := &fakeT{}
	if perfassert.MaxAllocs(ft, p, "main.encode", 1999) || len(ft.errors) != 1 ||
		!strings.Contains(ft.errors[0], "perfassert.MaxAllocs: ") || !strings.Contains(ft.errors[0], "top functions by self allocations") {
		t.Errorf("MaxAllocs over the limit should fail naming it: %q", ft.errors)
	}
	if ft := (&fakeT{}); !perfassert.MaxTotalAllocBytes(ft, p, "main.work", 1<<30) || len(ft.errors) != 0 {
		t.Errorf("MaxTotalAllocBytes within the limit failed: %q", ft.errors)
	}

	// A CPU profile has no allocations; a heap profile has no time.
	cpu, err := loaders.Load("../testdata/pprof/busy.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := limits.Check(cpu, "main.main", limits.Limit{Quantity: limits.SelfAllocs, Count: 1}); err == nil ||
		!strings.Contains(err.Error(), "needs an allocation profile with sample type alloc_objects") || !strings.Contains(err.Error(), "cpu/nanoseconds") {
		t.Errorf("allocs on a CPU profile: err = %v", err)
	}
	if _, err := limits.Check(p, "main.encode", limits.Limit{Quantity: limits.SelfTime, Time: 1}); !errors.Is(err, analysis.ErrWrongUnit) {
		t.Errorf("time on a heap profile: err = %v, want ErrWrongUnit", err)
	}
	if _, err := limits.Check(p, "main.encode", limits.Limit{Quantity: limits.SelfAllocs, Count: 1}, perfassert.WithSelection(analysis.Selection{SampleType: "alloc_space"})); err == nil || !strings.Contains(err.Error(), "alloc_space/bytes is bytes") {
		t.Errorf("objects limit on bytes: err = %v", err)
	}
	if _, err := limits.Check(p, "main.encode", limits.Limit{Quantity: limits.SelfAllocs, Count: -1}); err == nil {
		t.Error("negative limit accepted")
	}
}
