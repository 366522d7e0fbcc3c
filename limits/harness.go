package limits

import (
	"reflect"
	"runtime"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// record is p's hotbudget record (zero when p has none or it is unreadable:
// the readers below then know nothing).
func record(p *profile.Profile) (meta.Record, bool) {
	if p == nil {
		return meta.Record{}, false
	}
	r, ok, err := meta.Get(p)
	if err != nil {
		return meta.Record{}, false
	}
	return r, ok
}

// isHarness reports whether a function belongs to the machinery that runs
// tests and captures rather than to the code under test: package testing
// (tRunner, the benchmark loop), runtime.goexit, runtime/pprof.Do and
// perfassert itself. Failure text leaves these out of its top tables and
// off the root end of its stacks; captures trim them off their samples.
func isHarness(name string) bool {
	return strings.HasPrefix(name, "testing.") || name == "runtime.goexit" ||
		name == "runtime/pprof.Do" || strings.HasPrefix(name, harnessPkg)
}

// harnessPkg is the prefix of perfassert's function names
// (".../perfassert."), found at run time from this package's own path, a
// sibling of perfassert's, so that it follows the module path.
var harnessPkg = func() string {
	name := runtime.FuncForPC(reflect.ValueOf(record).Pointer()).Name() // ".../limits.record"
	return strings.TrimSuffix(name, "limits.record") + "perfassert."
}()
