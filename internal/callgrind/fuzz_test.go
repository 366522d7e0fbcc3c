package callgrind

import (
	"path/filepath"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
)

// FuzzParse checks that Parse never panics, and that what it accepts is a
// valid profile whose self costs add up to its total and whose totals are
// never below the self costs.
func FuzzParse(f *testing.F) {
	for _, name := range files {
		f.Add(readGz(f, filepath.Join(dir, name+".callgrind.gz")))
	}
	for _, s := range edgeCases {
		f.Add([]byte(s.in))
	}
	// The shapes of TestMemoryBounded, small: tables per thread and
	// event, fan-in chains, deep stacks for many events.
	f.Add(threadEvents(20, 20, 5))
	f.Add(threadSlots(10, 10, 5))
	f.Add(fanIn(10, 10))
	f.Add(deepEvents(5, 20))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, ok := testutil.ParseValid(t, Parse, data)
		if !ok {
			return
		}
		testutil.CheckProfile(t, "fuzz", p)
	})
}
