// record --instructions counts allocations too: every allocation of the
// counted runs, tiny objects one by one (internal/exactalloc), per
// function, judged exactly.

package gate

import (
	"bytes"
	"fmt"
	"regexp"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/callgrind"
	"github.com/hotbudget/hotbudget/internal/exactalloc"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/valgrind"
)

// exactAllocArgs are the callgrind options under which a dump of binary
// holds its allocations (exactalloc.Args: the allocators' contexts and
// morestack's, whose callers rebuild a chain a stack switch broke), or
// none when mallocgc cannot be named in it; the benchmark's allocations
// are then not counted.
func (r *recorder) exactAllocArgs(binary string) []string {
	_, args, err := exactalloc.Args(binary)
	if err != nil {
		return nil
	}
	return args
}

// attachExactAllocs reads the allocations of dump, a callgrind dump of
// binary run with exactAllocArgs whose addresses sym names, into p's
// allocation comment, and
// returns each function's calls into the runtime's type-cache miss paths
// (exactalloc.Counts.Misses; nil when the dump's allocations cannot be
// read, in a binary that does not name mallocgc).
func attachExactAllocs(p *profile.Profile, binary, dump string, sym callgrind.Symbolizer) (map[string]int64, error) {
	name, err := exactalloc.MallocName(binary)
	if err != nil {
		return nil, nil
	}
	ap, c, err := exactalloc.ReadFile(dump, name, sym)
	if err != nil {
		return nil, fmt.Errorf("counting allocations: %w", err)
	}
	return c.Misses, withAllocs(p, ap)
}

// withAllocs stores the allocation profile ap in p's comments.
func withAllocs(p, ap *profile.Profile) error {
	var b bytes.Buffer
	if err := ap.Write(&b); err != nil {
		return err
	}
	p.Comments = meta.WithAllocProfile(p.Comments, b.Bytes())
	return nil
}

// allocsOf reads the allocation profile of p's comments (nil: none).
func allocsOf(p *profile.Profile) (*profile.Profile, error) {
	if p == nil {
		return nil, nil
	}
	data, ok, err := meta.AllocProfile(p.Comments)
	if err != nil || !ok {
		return nil, err
	}
	return profile.Parse(bytes.NewReader(data))
}

// diffExactAllocs stores in d the allocations of the process of 2N ops
// less those of N ops (more, less): what work ops allocate.
func diffExactAllocs(d, more, less *profile.Profile, work int64) error {
	ma, err := allocsOf(more)
	if err != nil {
		return err
	}
	la, err := allocsOf(less)
	if err != nil || ma == nil || la == nil {
		return err
	}
	ad, _, err := valgrind.Difference(ma, la)
	if err != nil {
		return fmt.Errorf("the difference of the counted allocations: %w", err)
	}
	ad.Comments = nil
	meta.Set(ad, meta.Record{WorkUnit: meta.WorkOp, Instrument: "callgrind allocations", Runs: []meta.Run{{Work: float64(work)}}})
	return withAllocs(d, ad)
}

// exactAllocsOnly is the functions whose allocations record judges: the
// gate's, else the module's.
func (r *recorder) exactAllocsOnly(res *Measurement) *regexp.Regexp {
	if r.o.Gate != nil {
		return r.o.Gate
	}
	if len(res.modules) > 0 {
		return ModulePattern(res.modules)
	}
	return nil
}

// compareExactAllocs judges the counted allocations per op of head
// against base, exactly (diff.CountedAllocTolerance: one more allocation
// an op of a judged function is a regression, a few objects over the
// whole run are not: measured, uuid.UUID.String's count moved by one
// object over 242,872 ops between processes, go-version's benchmark
// function's by four); nil when a side has none (a
// base from the history recorded without them).
func compareExactAllocs(base, head *profile.Profile, only *regexp.Regexp) (*diff.AllocReport, error) {
	ba, err := allocsOf(base)
	if err != nil {
		return nil, fmt.Errorf("base's allocations: %w", err)
	}
	ha, err := allocsOf(head)
	if err != nil {
		return nil, fmt.Errorf("head's allocations: %w", err)
	}
	if ba == nil || ha == nil {
		return nil, nil
	}
	var t [2]*diff.AllocTable
	for i, ap := range []*profile.Profile{ba, ha} {
		rec, _ := meta.Known(ap)
		if len(rec.Runs) != 1 || !(rec.Runs[0].Work > 0) {
			return nil, fmt.Errorf("counted allocations without their ops")
		}
		if t[i], err = diff.AllocTableOf(ap, rec.Runs[0].Work, only); err != nil {
			return nil, err
		}
	}
	// A benchmark's process runs many more ops than a capture's
	// iterations, and its goroutines move between threads more (go test's
	// own goroutines): up to 6 of uuid.UUID.String's allocations were
	// charged to runtime.slicebytetostring in one process, callgrind's
	// chain of callers lost after a thread switch. And what a process
	// allocates once does not always cancel between the processes of N
	// and 2N ops (a cache filled, a sync.Map promoting its entries after
	// as many misses): fxamacker/cbor's whole op moved by 15, 24 and 27
	// objects between two processes of one commit.
	tol := diff.CountedAllocTolerance
	tol.Once.Objects = max(tol.Once.Objects, recordAllocsOnce)
	return diff.CompareAllocs(t[0], t[1], "op", tol), nil
}

// recordAllocsOnce is the objects a counted benchmark's run may allocate
// once without a verdict (diff.AllocTolerance.Once): more than twice the
// 27 measured. One more object an op is caught from 65 ops a side on.
const recordAllocsOnce = 64

// allocsFailed reports whether e's counted allocations regressed.
func (e exactResult) allocsFailed() bool { return e.allocs != nil && e.allocs.Failed() }

// allocsLine is the allocation verdict of e in a line ("" when
// nothing regressed).
func (e exactResult) allocsLine() string {
	if !e.allocsFailed() {
		return ""
	}
	var names []string
	for _, row := range e.allocs.Regressions() {
		names = append(names, fmt.Sprintf("%s allocates more (%.4g -> %.4g objects an op)", shortName(row.Name), row.Base.Self.Objects, row.Head.Self.Objects))
	}
	return fmt.Sprint(names)
}

// writeExactAllocs writes a benchmark's counted allocations' report, or,
// where the base came from the history (whose records hold no allocation
// counts), that they were not judged.
func writeExactAllocs(b *bytes.Buffer, e exactResult, fromHistory bool) {
	switch {
	case e.allocs != nil:
		e.allocs.Write(b, "text")
	case fromHistory:
		b.WriteString("allocations per op: not judged: the base's record in the history holds no allocation counts (measure the base, without --base-from-history, to judge them)\n")
	}
}
