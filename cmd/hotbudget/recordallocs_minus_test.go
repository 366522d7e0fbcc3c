package main

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
)

// allocsProfile is an exact allocation profile of the given stacks
// ("f@line;caller@line", leaf first) with their objects and bytes.
func allocsProfile(stacks map[string][2]int64) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"}, Period: 1,
	}
	funcs := map[string]*profile.Function{}
	for stack, v := range stacks {
		var locs []*profile.Location
		for _, fr := range strings.Split(stack, ";") {
			name, line, _ := strings.Cut(fr, "@")
			f := funcs[name]
			if f == nil {
				f = &profile.Function{ID: uint64(len(funcs) + 1), Name: name, Filename: name + ".go"}
				funcs[name] = f
				p.Function = append(p.Function, f)
			}
			n := int64(0)
			for _, c := range line {
				n = 10*n + int64(c-'0')
			}
			l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f, Line: n}}}
			p.Location = append(p.Location, l)
			locs = append(locs, l)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{v[0], v[1]}})
	}
	return p
}

// TestAllocsMinus: record's per-op allocations are the difference of
// two runs, which cancels what a benchmark allocates outside its loop.
func TestAllocsMinus(t *testing.T) {
	short := allocsProfile(map[string][2]int64{"m.setup@1;m.Bench@2": {50, 5000}, "m.op@7;m.Bench@3": {101, 1616}})
	long := allocsProfile(map[string][2]int64{"m.setup@1;m.Bench@2": {50, 5000}, "m.op@7;m.Bench@3": {201, 3216}})
	st, _ := diff.AllocTableOf(short, 101, nil)
	lt, _ := diff.AllocTableOf(long, 201, nil)
	d := allocsMinus(lt, st)
	if d.Work != 100 || d.Funcs["m.op"].Self != (diff.AllocCount{Objects: 100, Bytes: 1600}) || d.Funcs["m.setup"].Self != (diff.AllocCount{}) {
		t.Errorf("difference: work %v, m.op %+v, m.setup %+v", d.Work, d.Funcs["m.op"].Self, d.Funcs["m.setup"].Self)
	}
}

// TestCompareAllocsNothingBothSides: a function named on both sides
// without an allocation on either, such as m.setup after record's N and 2N
// runs are subtracted (what a benchmark allocates outside its loop), is
// unchanged, not new (seen in record's allocation JSON for a module's
// MustParse and init).
func TestCompareAllocsNothingBothSides(t *testing.T) {
	side := func(extra int64) *diff.AllocTable {
		short := allocsProfile(map[string][2]int64{"m.setup@1;m.Bench@2": {50, 5000}, "m.op@7;m.Bench@3": {101, 1616}})
		long := allocsProfile(map[string][2]int64{"m.setup@1;m.Bench@2": {50, 5000}, "m.op@7;m.Bench@3": {201 + extra, 3216 + 16*extra}})
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
