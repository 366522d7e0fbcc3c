package diff_test

import (
	"fmt"
	"os"
	"regexp"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
)

// Two exact allocation profiles (recorded at runtime.MemProfileRate = 1)
// of 100 iterations each: at head, m.parse allocates one more 24-byte
// object an iteration. One profile a side decides: the counts are exact.
func ExampleCompareAllocs() {
	mk := func(objects int64) *profile.Profile {
		return allocProfile(map[string][2]int64{"m.parse@12;m.run@3": {objects, 24 * objects}, "m.run@4": {100, 800}})
	}
	only := regexp.MustCompile(`^m\.`)
	base, err := diff.AllocTableOf(mk(200), 100, only)
	if err != nil {
		fmt.Println(err)
		return
	}
	head, err := diff.AllocTableOf(mk(300), 100, only)
	if err != nil {
		fmt.Println(err)
		return
	}
	rep := diff.CompareAllocs(base, head, "iteration", diff.DefaultAllocTolerance)
	rep.Write(os.Stdout, "text")
	// Output:
	// allocations per iteration (exact): 1 function allocates more: m.parse (2 objects, 48B -> 3 objects, 72B); all judged functions: 3 objects, 56B -> 4 objects, 80B
	// exact counts (runtime.MemProfileRate = 1), no statistics: a function regressed when its own allocations per iteration grew by more than 0.5 objects or more than 8 bytes (or 1% of them), plus what a run may allocate once (16 objects, 16KiB) over its 100 iterations
	//   regressed  m.parse: self 2 objects, 48B -> 3 objects, 72B (+1 object, +24B); total 2 objects, 48B -> 3 objects, 72B
	//       m.parse.go:12: 2 objects, 48B -> 3 objects, 72B (+1 object, +24B)
	//   unchanged  m.run: self 1 object, 8B -> 1 object, 8B (0 objects, 0B); total 3 objects, 56B -> 4 objects, 80B
}
