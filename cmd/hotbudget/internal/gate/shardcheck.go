package gate

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/index"
	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/loaders"
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
// holds, of all its processes (a confirmed count holds several).
func checkOps(p *profile.Profile, ops int64) error {
	if ops < 1 {
		return fmt.Errorf("ops %d: want at least 1", ops)
	}
	r, ok, err := meta.Get(p)
	if err != nil {
		return err
	}
	if !ok || len(r.Runs) == 0 {
		return fmt.Errorf("shard.json says %d ops, the profile records no process", ops)
	}
	for _, run := range r.Runs {
		if !(run.Work >= 1) || run.Work > 1<<53 {
			return fmt.Errorf("a process of %v ops in the profile: want at least 1", run.Work)
		}
	}
	if countedOps(p) != ops {
		return fmt.Errorf("shard.json says %d ops, the profile %v", ops, r.Runs)
	}
	return nil
}

// checkPprof refuses, from its first bytes, a file that is not the pprof
// profile record writes (text, a gzip bomb of it).
func checkPprof(path string) error {
	f, err := loaders.DetectFile(path)
	if err != nil {
		return err
	}
	if f != loaders.FormatPprof {
		return fmt.Errorf("%s: not a pprof profile (its first bytes read as %q): record writes pprof", path, f)
	}
	return nil
}

// readProfile reads a profile record wrote, a counted difference among
// them, whose counts may be negative (which the loaders refuse), within
// the loaders' bounds: pprof only, told from its first bytes
// (checkPprof); at most HOTBUDGET_MAX_BYTES after decompression; each
// field charged to the memory budget before pprof's parser runs, as the
// loaders charge a pprof file (internal/index, internal/membudget).
func readProfile(path string) (*profile.Profile, error) {
	if err := checkPprof(path); err != nil {
		return nil, err
	}
	limit, err := membudget.InputLimit(0)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	lr := &io.LimitedReader{R: r, N: min(limit, math.MaxInt64-1) + 1} // no limit: math.MaxInt64
	data, _, err := index.Reader{Limit: limit, Meter: membudget.ForLimit(limit)}.Read(lr)
	if err == nil && lr.N <= 0 {
		err = fmt.Errorf("more than %s after decompression: %w; raise the limit with %s", membudget.SizeString(limit), membudget.ErrTooLarge, membudget.InputEnv)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p, err := profile.ParseData(data)
	if err == nil {
		err = p.CheckValid()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
