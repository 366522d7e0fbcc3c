package gate

import "testing"

// TestStdFunction: which names are Go's runtime's and standard library's.
func TestStdFunction(t *testing.T) {
	for name, want := range map[string]bool{
		"runtime.mallocgcSmallScanNoHeader":                     true,
		"internal/bytealg.IndexByteString":                      true,
		"strings.(*Builder).WriteByte":                          true,
		"indexbytebody":                                         true,
		"msort_with_tmp.part.0":                                 true,
		"github.com/blang/semver/v4.Parse":                      false,
		"gopkg.in/yaml%2ev3.(*decoder).prepare":                 false,
		"main.work":                                             false,
		"main_test.TestX.func1":                                 false,
		"example.com/m/sub.F[go.shape.int]":                     false,
		"golang.org/x/text/unicode/norm.(*Form).Bytes":          false,
		"github.com/hotbudget/hotbudget/examples/capture.Parse": false,
	} {
		if got := stdFunction(name); got != want {
			t.Errorf("stdFunction(%q) = %v, want %v", name, got, want)
		}
	}
}
