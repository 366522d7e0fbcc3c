package limits

import (
	"reflect"
	"runtime"
	"strings"
)

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
	name := runtime.FuncForPC(reflect.ValueOf(here).Pointer()).Name() // ".../limits.here"
	return strings.TrimSuffix(name, "limits.here") + "perfassert."
}()

// here is a function of this package, whose name gives the package's path.
func here() {}
