package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// checkAllocs checks a shard's allocations of one benchmark: both sides,
// each of positive work and of counts neither negative nor infinite, as
// the allocation runs measure them (shardset.Check has checked that every
// benchmark compared has them).
func checkAllocs(a shardAllocs) error {
	for _, t := range []struct {
		side string
		t    *diff.AllocTable
	}{{"base", a.Base}, {"head", a.Head}} {
		if t.t == nil {
			return fmt.Errorf("the allocations of %s lack the %s side", a.Benchmark, t.side)
		}
		if err := checkAllocTable(t.t); err != nil {
			return fmt.Errorf("the allocations of %s at %s: %w", a.Benchmark, t.side, err)
		}
	}
	return nil
}

func checkAllocTable(t *diff.AllocTable) error {
	if !(t.Work > 0) || math.IsInf(t.Work, 0) {
		return fmt.Errorf("work %v: want a positive number of ops", t.Work)
	}
	bad := func(c diff.AllocCount) bool {
		return !(c.Objects >= 0) || !(c.Bytes >= 0) || math.IsInf(c.Objects, 0) || math.IsInf(c.Bytes, 0)
	}
	if bad(t.Judged) || bad(t.All) {
		return errors.New("a negative or infinite total")
	}
	for name, f := range t.Funcs {
		if f == nil || bad(f.Self) || bad(f.Total) || bad(f.Blocks16) {
			return fmt.Errorf("function %q: no counts, or a negative or infinite count", name)
		}
		for line, c := range f.Lines {
			if bad(c) {
				return fmt.Errorf("function %q, line %q: a negative or infinite count", name, line)
			}
		}
	}
	for stack, c := range t.Stacks {
		if bad(c) {
			return fmt.Errorf("stack %q: a negative or infinite count", stack)
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
