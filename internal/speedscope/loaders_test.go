package speedscope_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/loaders"
)

// A profile loaded by the public loaders, written as speedscope and read
// back through loaders keeps every function's self and total. This lives in
// an external test package because loaders imports speedscope.
func TestRoundTripThroughLoaders(t *testing.T) {
	for _, name := range []string{"cpuprofile/simple.cpuprofile", "cpuprofile/sucrase.cpuprofile", "pprof/sample.cpu"} {
		t.Run(name, func(t *testing.T) {
			p, err := loaders.Load(filepath.Join("../../../shared/corpus", name))
			if err != nil && strings.Contains(err.Error(), "not implemented yet") {
				// The V8 loader is another package's work in progress.
				t.Skipf("loader not there yet: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := loaders.Write(&buf, p, loaders.FormatSpeedscope); err != nil {
				t.Fatal(err)
			}
			q, err := loaders.Read(&buf)
			if err != nil {
				t.Fatal(err)
			}
			want, got := table(t, p), table(t, q)
			if len(got) != len(want) {
				t.Errorf("%d functions after the round trip, want %d", len(got), len(want))
			}
			for k, w := range want {
				if g := got[k]; g != w {
					t.Errorf("%v: self/total %v after the round trip, want %v", k, g, w)
				}
			}
		})
	}
}

type key struct {
	name, file string
	line, col  int64
}

func table(t *testing.T, p *profile.Profile) map[key][2]time.Duration {
	t.Helper()
	tab, err := analysis.Functions(p)
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[key][2]time.Duration)
	for _, f := range tab.Functions {
		k := key{f.Name, f.File, f.Line, f.Column}
		if _, dup := m[k]; dup {
			t.Fatalf("two functions %v", k)
		}
		m[k] = [2]time.Duration{f.Self, f.Total}
	}
	return m
}
