package speedscope_test

import (
	"bytes"
	"path/filepath"
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
	for _, name := range []string{"cpuprofile/simple.cpuprofile", "cpuprofile/sucrase.cpuprofile.gz", "pprof/sample.cpu"} {
		t.Run(name, func(t *testing.T) {
			p, err := loaders.Load(filepath.Join("../../testdata/corpus", name))
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
				g := got[k]
				if w[1] < 0 { // merged by speedscope: self only
					g[1] = -1
				}
				if g != w {
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
	// V8 keeps apart functions that speedscope's frames cannot (same name,
	// file, line and column in two scripts: sucrase's readToken): speedscope
	// merges them. Their self times add up; their total is the time of the
	// samples through either, which the sum only bounds, so it is compared
	// for functions that are alone under their key.
	m := make(map[key][2]time.Duration)
	for _, f := range tab.Functions {
		k := key{f.Name, f.File, f.Line, f.Column}
		if v, dup := m[k]; dup {
			m[k] = [2]time.Duration{v[0] + time.Duration(f.Self), -1}
			continue
		}
		m[k] = [2]time.Duration{time.Duration(f.Self), time.Duration(f.Total)}
	}
	return m
}
