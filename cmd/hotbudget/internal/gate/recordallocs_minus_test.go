package gate

import (
	"testing"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// TestAllocsMinus: record's per-op allocations are the difference of
// two runs, which cancels what a benchmark allocates outside its loop.
func TestAllocsMinus(t *testing.T) {
	short := testutil.AllocProfile(map[string][2]int64{"m.setup@1;m.Bench@2": {50, 5000}, "m.op@7;m.Bench@3": {101, 1616}})
	long := testutil.AllocProfile(map[string][2]int64{"m.setup@1;m.Bench@2": {50, 5000}, "m.op@7;m.Bench@3": {201, 3216}})
	st, _ := diff.AllocTableOf(short, 101, nil)
	lt, _ := diff.AllocTableOf(long, 201, nil)
	d := allocsMinus(lt, st)
	if d.Work != 100 || d.Funcs["m.op"].Self != (diff.AllocCount{Objects: 100, Bytes: 1600}) || d.Funcs["m.setup"].Self != (diff.AllocCount{}) {
		t.Errorf("difference: work %v, m.op %+v, m.setup %+v", d.Work, d.Funcs["m.op"].Self, d.Funcs["m.setup"].Self)
	}
	// m.op's objects are 16-byte blocks: the difference keeps them as
	// such, or the comparison would judge the tiny allocator's blocks per
	// function (it did: record failed BurntSushi/toml's untouched lexBool,
	// "1 object, 16B -> 2 objects, 32B", beside a change elsewhere).
	if b := d.Funcs["m.op"].Blocks16; b != (diff.AllocCount{Objects: 100, Bytes: 1600}) {
		t.Errorf("m.op's 16-byte blocks in the difference: %+v, want 100 objects, 1600B", b)
	}
}

// TestRecordAllocsTinyBlocksMoved: a 16-byte block that moves from one
// function to another between N and 2N runs' differences is not a
// regression of the function it moved to.
func TestRecordAllocsTinyBlocksMoved(t *testing.T) {
	side := func(f, g int64) *diff.AllocTable {
		short := testutil.AllocProfile(map[string][2]int64{"m.f@1;m.Bench@2": {1, 16}, "m.g@7;m.Bench@3": {1, 16}})
		long := testutil.AllocProfile(map[string][2]int64{"m.f@1;m.Bench@2": {1 + f, 16 + 16*f}, "m.g@7;m.Bench@3": {1 + g, 16 + 16*g}})
		st, _ := diff.AllocTableOf(short, 100, nil)
		lt, _ := diff.AllocTableOf(long, 200, nil)
		return allocsMinus(lt, st)
	}
	// Base: m.f opens 100 blocks in 100 ops, m.g 100; head: m.f none, m.g 200.
	rep := diff.CompareAllocs(side(100, 100), side(0, 200), "op", diff.DefaultAllocTolerance)
	if rep.Failed() {
		t.Errorf("16-byte blocks that moved judged per function: %+v", rep.Regressions())
	}
}

// TestCompareAllocsNothingBothSides: a function named on both sides
// without an allocation on either, such as m.setup after record's N and 2N
// runs are subtracted (what a benchmark allocates outside its loop), is
// unchanged, not new (seen in record's allocation JSON for a module's
// MustParse and init).
func TestCompareAllocsNothingBothSides(t *testing.T) {
	side := func(extra int64) *diff.AllocTable {
		short := testutil.AllocProfile(map[string][2]int64{"m.setup@1;m.Bench@2": {50, 5000}, "m.op@7;m.Bench@3": {101, 1616}})
		long := testutil.AllocProfile(map[string][2]int64{"m.setup@1;m.Bench@2": {50, 5000}, "m.op@7;m.Bench@3": {201 + extra, 3216 + 16*extra}})
		st, _ := diff.AllocTableOf(short, 101, nil)
		lt, _ := diff.AllocTableOf(long, 201, nil)
		return allocsMinus(lt, st)
	}
	rep := diff.CompareAllocs(side(0), side(0), "op", diff.DefaultAllocTolerance)
	found := false
	for _, row := range rep.Rows {
		if row.Name == "m.setup" {
			found = true
			if row.Verdict != diff.Unchanged {
				t.Errorf("m.setup, no allocation on either side: verdict %s, want unchanged", row.Verdict)
			}
		}
	}
	if !found {
		t.Fatalf("m.setup is not among the rows: %+v", rep.Rows)
	}
}
