// Package harness names the frames of the machinery that runs tests and
// captures rather than the code under test: package testing (tRunner, the
// benchmark loop), runtime.goexit, runtime/pprof.Do and perfassert itself.
// Failure texts leave them out of their top tables and off the root end of
// their stacks.
package harness

import (
	"reflect"
	"runtime"
	"strings"
)

// IsFrame reports whether the function named name is of the harness.
func IsFrame(name string) bool {
	return strings.HasPrefix(name, "testing.") || name == "runtime.goexit" ||
		name == "runtime/pprof.Do" || strings.HasPrefix(name, perfassertPkg)
}

// perfassertPkg is the prefix of perfassert's function names
// (".../perfassert."), found at run time from this package's own path, so
// that it follows the module path.
var perfassertPkg = func() string {
	name := runtime.FuncForPC(reflect.ValueOf(here).Pointer()).Name() // ".../internal/harness.here"
	return strings.TrimSuffix(name, "internal/harness.here") + "perfassert."
}()

// here is a function of this package, whose name gives the package's path.
func here() {}
