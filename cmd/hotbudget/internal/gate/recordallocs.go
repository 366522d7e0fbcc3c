package gate

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Allocations in record.
//
// After the CPU runs, every benchmark both sides have runs twice more a
// side with -test.memprofilerate=1 -test.memprofile, which records every
// allocation with its stack: once with N iterations and once with 2N
// (-test.benchtime=Nx). go test runs a benchmark once with b.N = 1 before
// the N asked, and the benchmark's setup allocates whatever N is: the
// difference of the two runs is the allocations of exactly N ops, per
// function, with everything outside the loop cancelled. Allocations per op
// are counts, not estimates: diff.CompareAllocs judges them exactly, a
// function that allocates more per op beyond diff.DefaultAllocTolerance
// regressed, with no statistics and no runs to repeat.

// Bounds of one allocation run of a benchmark, by what an op took when
// calibrated (on either side: the most an op allocated): allocWall of its
// time per op; allocMaxRecords allocations (each recorded with a stack walk
// at rate 1: several microseconds on a busy machine);
// allocMaxBytes bytes allocated (no collection: GOGC is off); at most
// allocMaxIters ops.
const (
	allocWall       = 200 * time.Millisecond
	allocMaxRecords = 300_000
	allocMaxBytes   = 128 << 20
	// Many ops, so that what happens once in a run (a pooled object
	// allocated anew, a reused slice grown: fastjson's parser cache, 23KB
	// once, moved an unchanged benchmark by 24B an op in 1000 ops) weighs
	// little per op.
	allocMaxIters = 100_000
)

// allocGCLimit is the heap size at which the allocation runs collect
// garbage (GOMEMLIMIT; GOGC is off).
const allocGCLimit = "1GiB"

// allocIters is N for leaf l's allocation runs: at least 2, since with
// -test.benchtime=1x go test runs its first run of one op alone, and the
// difference of the 1x and 2x runs would be two ops, not one.
func allocIters(l leaf) int64 {
	n := int64(allocMaxIters)
	if l.nsOp > 0 {
		n = min(n, int64(float64(allocWall)/l.nsOp))
	}
	if l.allocsOp > 0 {
		n = min(n, int64(allocMaxRecords/l.allocsOp))
	}
	if l.bytesOp > 0 {
		n = min(n, int64(allocMaxBytes/l.bytesOp))
	}
	return max(n, 2)
}

// allocResult is one benchmark's allocations per op on both sides.
type allocResult struct {
	name       string // pkg + benchmark, as the functions' reports name it
	base, head *diff.AllocTable
}

// recordAllocs runs the allocation runs of every benchmark both sides
// have and returns their per-op tables; only selects the functions judged
// (the gate), nil for all.
func (r *recorder) recordAllocs(ctx context.Context, sides []*recSide, leaves []leaf, only *regexp.Regexp) ([]allocResult, error) {
	t0 := time.Now()
	base, head := sides[0], sides[1]
	var out []allocResult
	for _, l := range leaves {
		if !base.leaves[l.key()] || !head.leaves[l.key()] {
			continue
		}
		n := allocIters(l)
		res := allocResult{name: l.key()}
		for _, s := range sides {
			t, err := r.allocsPerOp(ctx, s, l, n, only)
			if err != nil {
				return nil, err
			}
			if s == base {
				res.base = t
			} else {
				res.head = t
			}
		}
		out = append(out, res)
	}
	r.progress("recorded the allocations of %s exactly (-test.memprofilerate=1, runs of N and 2N ops a side) in %s (estimated %s)", plural(len(out), "benchmark", "benchmarks"), since(t0), r.allocEstimate(leaves, base, head).Round(time.Second))
	return out, nil
}

// allocsPerOp runs leaf l on side s with N and 2N iterations at
// -test.memprofilerate=1 and returns the difference of the two
// allocation profiles by function: the allocations of N ops. The 2N
// run's profile is written under --out as NAME.allocs.pb.gz.
func (r *recorder) allocsPerOp(ctx context.Context, s *recSide, l leaf, n int64, only *regexp.Regexp) (*diff.AllocTable, error) {
	dir, err := os.MkdirTemp(s.tmp, "mem")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	b := s.bins[l.pkg]
	var tables [2]*diff.AllocTable
	var long *profile.Profile
	for i, iters := range []int64{n, 2 * n} {
		raw := filepath.Join(dir, fmt.Sprintf("mem%d.pprof", i))
		what := fmt.Sprintf("%s %s at %s %s (allocations, %d ops)", l.pkg, l.name, s.name, s.rev, iters)
		cmd, stdout, stderr := r.allocCmd(ctx, b, l, iters, raw)
		if err := cmd.Run(); err != nil {
			return nil, benchFailed(ctx, s, b, err, stdout, stderr)
		}
		f, err := os.Open(raw)
		if err != nil {
			return nil, fmt.Errorf("%s wrote no allocation profile: %w", what, err)
		}
		p, err := profile.Parse(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("the allocation profile of %s: %w", what, err)
		}
		// File names relative to the checkout, so that lines compare
		// across the two worktrees.
		for _, fn := range p.Function {
			if rel, ok := strings.CutPrefix(fn.Filename, s.root+string(filepath.Separator)); ok {
				fn.Filename = filepath.ToSlash(rel)
			}
		}
		// Work: the iterations asked and go test's first run of one op
		// (none with b.Loop: only the difference of the two runs counts).
		if tables[i], err = diff.AllocTableOf(p, float64(iters+1), only); err != nil {
			return nil, fmt.Errorf("the allocation profile of %s: %w", what, err)
		}
		long = p
	}
	// The ops of the 2N run: 2N in a b.Loop, one more in a loop over b.N
	// (go test's first run of one op); the record does not say which.
	meta.Set(long, meta.Record{
		Name:  fmt.Sprintf("%s %s at %s %s, allocations of %d ops (-test.benchtime=%dx, -test.memprofilerate=1)", l.pkg, l.name, s.name, s.rev, 2*n, 2*n),
		Build: s.build, Race: s.race,
	})
	path := filepath.Join(s.out, filepath.FromSlash(l.pkg), unsafeName.ReplaceAllString(l.name, "_")+".allocs.pb.gz")
	if err := writeProfile(path, long); err != nil {
		return nil, err
	}
	return allocsMinus(tables[1], tables[0]), nil
}

// allocCmd is the command of an allocation run of leaf l's benchmark with
// iters ops, writing its allocation profile to raw.
func (r *recorder) allocCmd(ctx context.Context, b *testBinary, l leaf, iters int64, raw string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	// One P (-test.cpu 1, after benchCmd's): b.RunParallel then runs
	// one goroutine, and a sync.Pool has one local pool, so that which
	// goroutine finds a pooled object is not left to the scheduler
	// (fastjson's parser pool gave a fresh parser, 4,000 objects, to
	// one run in five at GOMAXPROCS 2). What an op allocates does not
	// depend on it; what RunParallel sets up per goroutine cancels in
	// the difference.
	cmd, stdout, stderr := r.benchCmd(ctx, b, "-test.bench", l.pattern(), "-test.benchtime", fmt.Sprintf("%dx", iters),
		"-test.count", "1", "-test.memprofilerate", "1", "-test.memprofile", raw, "-test.cpu", "1")
	// No garbage collection below allocGCLimit: a sync.Pool is emptied
	// by collections, which come as the process allocates and then
	// refill it, a different number of times in each run (fastjson's
	// parser pool moved an unchanged benchmark by 17 objects an op).
	// GODEBUG's memprofilerate sets the rate before package
	// initialisation: -test.memprofilerate is applied only once the
	// tests' flags are parsed, and what init allocated before is
	// sampled at the default rate, differently in every run (a file
	// fastjson's tests read in init moved an unchanged benchmark by
	// 3KiB an op).
	godebug := "memprofilerate=1"
	if v := os.Getenv("GODEBUG"); v != "" {
		godebug = v + "," + godebug
	}
	cmd.Env = append(os.Environ(), "GOGC=off", "GOMEMLIMIT="+allocGCLimit, "GODEBUG="+godebug)
	return cmd, stdout, stderr
}

// compareAllocs judges every benchmark's allocations per op exactly.
func compareAllocs(results []allocResult) []*diff.AllocReport {
	var out []*diff.AllocReport
	for _, a := range results {
		rep := diff.CompareAllocs(a.base, a.head, "op", diff.DefaultAllocTolerance)
		rep.Name = a.name
		out = append(out, rep)
	}
	return out
}

// allocsSummary is one line over every benchmark's allocations.
func allocsSummary(reps []*diff.AllocReport) string {
	var failed []string
	for _, r := range reps {
		if r.Failed() {
			failed = append(failed, r.Name)
		}
	}
	line := fmt.Sprintf("allocations per op (exact), %s: ", plural(len(reps), "benchmark", "benchmarks"))
	if len(failed) == 0 {
		return line + "no function allocates more"
	}
	return line + fmt.Sprintf("%d with functions allocating more (%s)", len(failed), strings.Join(failed, ", "))
}

// orderedAllocs is the allocation reports failing first, each group in
// benchmark order.
func orderedAllocs(reps []*diff.AllocReport) []*diff.AllocReport {
	out := slices.Clone(reps)
	slices.SortStableFunc(out, func(a, b *diff.AllocReport) int {
		return cmp.Compare(rankAlloc(a), rankAlloc(b))
	})
	return out
}

func rankAlloc(r *diff.AllocReport) int {
	if r.Failed() {
		return 0
	}
	return 1
}

// writeAllocsText writes the allocation reports of the benchmarks whose
// functions allocate more, and a line for the others.
func writeAllocsText(w io.Writer, reps []*diff.AllocReport) error {
	if len(reps) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nallocations (exact, per op: runs of N and 2N ops a side at -test.memprofilerate=1):\n")
	for _, r := range orderedAllocs(reps) {
		if !r.Failed() {
			fmt.Fprintf(w, "  %s\n", textfmt.Line(summaryOf(r)))
			continue
		}
		fmt.Fprintf(w, "\n== %s ==\n", textfmt.Name(r.Name))
		if err := r.Write(w, "text"); err != nil {
			return err
		}
	}
	return nil
}

// writeAllocsMarkdown writes the allocation reports of the benchmarks
// whose functions allocate more, and a list of the others.
func writeAllocsMarkdown(w io.Writer, reps []*diff.AllocReport) error {
	if len(reps) == 0 {
		return nil
	}
	fmt.Fprintf(w, "### Allocations per op (exact)\n\n")
	var quiet []*diff.AllocReport
	for _, r := range orderedAllocs(reps) {
		if !r.Failed() {
			quiet = append(quiet, r)
			continue
		}
		fmt.Fprintf(w, "#### %s\n\n", textfmt.MarkdownCode(r.Name))
		if err := r.Write(w, "markdown"); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if len(quiet) > 0 {
		fmt.Fprintf(w, "<details><summary>%d benchmarks whose functions allocate no more</summary>\n\n", len(quiet))
		for _, r := range quiet {
			fmt.Fprintf(w, "- %s\n", textfmt.MarkdownEscape(summaryOf(r)))
		}
		fmt.Fprintf(w, "\n</details>\n\n")
	}
	return nil
}

// allocsMinus returns t less u, function by function and line by line,
// with t.Work - u.Work units of work: the allocations of the work one run
// did beyond another's. record takes a benchmark's allocations per op as
// the difference of two runs of N and 2N ops, which cancels what the
// benchmark allocates outside its loop (setup, the first run at b.N = 1).
// A difference below zero (what the garbage collector's timing changes,
// such as a sync.Pool emptied once more in the shorter run) is kept: it is
// what the runs measured.
func allocsMinus(t, u *diff.AllocTable) *diff.AllocTable {
	add := func(a, b diff.AllocCount, k float64) diff.AllocCount {
		return diff.AllocCount{Objects: a.Objects + k*b.Objects, Bytes: a.Bytes + k*b.Bytes}
	}
	out := &diff.AllocTable{Work: t.Work - u.Work, Funcs: map[string]*diff.AllocFunc{}, Stacks: map[string]diff.AllocCount{},
		Judged: add(t.Judged, u.Judged, -1), All: add(t.All, u.All, -1)}
	for _, side := range []struct {
		t *diff.AllocTable
		k float64
	}{{t, 1}, {u, -1}} {
		for k, c := range side.t.Stacks {
			out.Stacks[k] = add(out.Stacks[k], c, side.k)
		}
		for name, f := range side.t.Funcs {
			g := out.Funcs[name]
			if g == nil {
				g = &diff.AllocFunc{Lines: map[string]diff.AllocCount{}}
				out.Funcs[name] = g
			}
			g.Self = add(g.Self, f.Self, side.k)
			g.Total = add(g.Total, f.Total, side.k)
			g.Blocks16 = add(g.Blocks16, f.Blocks16, side.k)
			for l, c := range f.Lines {
				g.Lines[l] = add(g.Lines[l], c, side.k)
			}
		}
	}
	return out
}
