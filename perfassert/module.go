// The module under test: which functions are its own, the ones perfassert judges by default.

package perfassert

import (
	"regexp"
	"runtime/debug"
	"sync"

	"github.com/hotbudget/hotbudget/internal/modname"
)

// mainModule is the path of the main module of this binary: in a test
// binary, the module whose package is under test. It is "" when the build
// does not say (GOPATH mode, go run of files).
var mainModule = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Path == "" || bi.Main.Path == "command-line-arguments" {
		return ""
	}
	return bi.Main.Path
})

// moduleFuncs matches the function names of the main module's packages and
// their external test packages as the Go toolchain writes them
// (modname.Pattern: "example.com/m/parse.Parse", "example.com/m.F",
// "example.com/m_test.TestX", "gopkg.in/yaml%2ev3.F"), nil when the module
// is unknown.
var moduleFuncs = sync.OnceValue(func() *regexp.Regexp {
	if mod := mainModule(); mod != "" {
		return modname.Pattern([]string{mod})
	}
	return nil
})
