package harness

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestIsFrame(t *testing.T) {
	self := runtime.FuncForPC(reflect.ValueOf(TestIsFrame).Pointer()).Name()
	module := strings.TrimSuffix(self, "internal/harness.TestIsFrame")
	for name, want := range map[string]bool{
		"testing.tRunner":                    true,
		"runtime.goexit":                     true,
		"runtime/pprof.Do":                   true,
		module + "perfassert.Capture":        true,
		module + "perfassert.(*session).run": true,
		module + "perfassertx.F":             false,
		"example.com/app.testingHelper":      false,
		"runtime.mallocgc":                   false,
		module + "limits.Check":              false,
	} {
		if got := IsFrame(name); got != want {
			t.Errorf("IsFrame(%q) = %v, want %v", name, got, want)
		}
	}
}
