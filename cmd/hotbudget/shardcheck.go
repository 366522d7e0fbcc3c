package main

import (
	"fmt"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// checkAllocs checks a shard's allocations of one benchmark: both sides,
// each of a positive work, with every function's counts (shardset.Check
// has checked that every benchmark compared has them). Counts may be
// negative: a table is the difference of the runs of N and 2N ops, whose
// runtimes allocate differently.
func checkAllocs(a shardAllocs) error {
	for _, t := range []struct {
		side string
		t    *diff.AllocTable
	}{{"base", a.Base}, {"head", a.Head}} {
		if t.t == nil {
			return fmt.Errorf("the allocations of %s lack the %s side", a.Benchmark, t.side)
		}
		if !(t.t.Work > 0) {
			return fmt.Errorf("the allocations of %s at %s: work %v, want a positive number of ops", a.Benchmark, t.side, t.t.Work)
		}
		for name, f := range t.t.Funcs {
			if f == nil {
				return fmt.Errorf("the allocations of %s at %s: function %q without counts", a.Benchmark, t.side, name)
			}
		}
	}
	return nil
}

// checkOps checks that a counted difference covers the ops its shard
// says (shard.json's ops, which the report prints): the work its record
// holds.
func checkOps(p *profile.Profile, ops int64) error {
	if ops < 1 {
		return fmt.Errorf("ops %d: want at least 1", ops)
	}
	r, ok, err := meta.Get(p)
	if err != nil {
		return err
	}
	if !ok || len(r.Runs) != 1 || r.Runs[0].Work != float64(ops) {
		return fmt.Errorf("shard.json says %d ops, the profile %v", ops, r.Runs)
	}
	return nil
}
