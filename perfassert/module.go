package perfassert

import (
	"regexp"
	"runtime/debug"
	"sync"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/internal/meta"
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
// their external test packages ("example.com/m/parse.Parse",
// "example.com/m.F", "example.com/m_test.TestX"), nil when the module is
// unknown.
var moduleFuncs = sync.OnceValue(func() *regexp.Regexp {
	return modulePattern(mainModule())
})

func modulePattern(mod string) *regexp.Regexp {
	if mod == "" {
		return nil
	}
	return regexp.MustCompile(`^` + regexp.QuoteMeta(mod) + `(/|\.|_test\.)`)
}

// capturedUnderRace reports whether p was captured by a binary built with
// the race detector, and whether p says at all (captures do).
func capturedUnderRace(p *profile.Profile) (race, known bool) {
	r, _ := meta.Known(p)
	return raceOf(r)
}

// raceOf is capturedUnderRace for the record r.
func raceOf(r meta.Record) (race, known bool) {
	if r.Build == "" {
		return false, false
	}
	return r.Race, true
}

// recordOf is the record of x's profile (meta.Known), if it holds one.
func recordOf(x *analysis.Index) meta.Record {
	r, _ := (*indexload.Index)(x).Index().Facts.Known()
	return r
}

// ProfileName returns the name recorded in p by Capture, or "".
func ProfileName(p *profile.Profile) string {
	r, _ := meta.Known(p)
	return r.Name
}
