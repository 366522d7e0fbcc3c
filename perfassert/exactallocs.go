// Allocations of a counted capture (Instructions): counted one by one
// under callgrind (internal/exactalloc), judged without tolerance.

package perfassert

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/callgrind"
	"github.com/hotbudget/hotbudget/internal/exactalloc"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/valgrind"
)

// Instruments of a counted capture's allocation profile (its record's
// Instrument): the allocations counted, with their bytes or without.
const (
	instrumentAllocs      = "callgrind allocations"
	instrumentAllocsBytes = "callgrind allocations and bytes"
)

// countedAlloc is how callgrind names runtime.mallocgc in this binary and
// the callgrind options under which the child's dumps hold its
// allocations (exactalloc.Args), or why they cannot be counted.
var countedAlloc = sync.OnceValues(func() (countedArgs, error) {
	exe, err := os.Executable()
	if err != nil {
		return countedArgs{}, err
	}
	malloc, args, err := exactalloc.Args(exe)
	return countedArgs{malloc, args}, err
})

// countedArgs is what exactalloc.Args says of this binary.
type countedArgs struct {
	malloc string
	args   []string
}

// countedMalloc is how callgrind names runtime.mallocgc in this binary
// (exactalloc.MallocName), or why it cannot be found.
func countedMalloc() (string, error) {
	c, err := countedAlloc()
	return c.malloc, err
}

// countedAllocArgs are the callgrind options under which the child's
// dumps hold its allocations: none when mallocgc cannot be named (a
// position-independent test binary, a Go release not validated), whose
// captures then hold no allocations.
func countedAllocArgs() []string {
	c, err := countedAlloc()
	if err != nil {
		return nil
	}
	return c.args
}

// attachCountedAllocs reads the allocations of the child's two counted
// dumps in dir (note: what it counted), takes their difference, what
// note.runs iterations allocate, and attaches it to p as its allocation
// profile, which MatchBaseline, NoRegression, CheckAllocs and MaxAllocs
// then judge. Nothing is attached when mallocgc cannot be named. It
// returns each function's calls into the runtime's type-cache miss paths
// (exactalloc.Counts.Misses), the larger of the two dumps', which
// diff.CompareCounts allows for.
func attachCountedAllocs(p *profile.Profile, dir string, note exactNote, name string) (map[string]int64, error) {
	malloc, err := countedMalloc()
	if err != nil {
		return nil, nil
	}
	shift := uint64(countRunsPC()) - note.pc
	sym := func(addr uint64) ([]callgrind.Frame, bool) { return runtimeFrames(addr + shift) }
	var phases [2]*profile.Profile
	var misses map[string]int64
	bytes := true
	for i := range phases {
		dump := filepath.Join(dir, fmt.Sprintf("callgrind.out.%d", note.last-1+i))
		ap, c, err := exactalloc.ReadFile(dump, malloc, sym)
		if err != nil {
			return nil, fmt.Errorf("perfassert: counting allocations: %w", err)
		}
		bytes = bytes && c.Bytes
		phases[i] = trimExact(ap)
		for fn, n := range c.Misses {
			if misses == nil {
				misses = map[string]int64{}
			}
			misses[fn] = max(misses[fn], n)
		}
	}
	d, _, err := valgrind.Difference(phases[1], phases[0])
	if err != nil {
		return nil, fmt.Errorf("perfassert: the difference of the counted allocations: %w", err)
	}
	d.Comments = nil
	inst := instrumentAllocs
	if bytes {
		inst = instrumentAllocsBytes
	}
	meta.Set(d, meta.Record{Name: name + " (allocations)", WorkUnit: meta.WorkIteration, Instrument: inst,
		Runs: []meta.Run{{Label: "1", Work: float64(note.runs)}}})
	return misses, attachAllocs(p, d)
}

// countedAllocs reports whether the allocation profile ap was counted
// under callgrind (every allocation, one by one), and whether its bytes
// were.
func countedAllocs(ap *profile.Profile) (counted, bytes bool) {
	if ap == nil {
		return false, false
	}
	rec, _ := meta.Known(ap)
	return strings.HasPrefix(rec.Instrument, instrumentAllocs), rec.Instrument == instrumentAllocsBytes
}
