package chrometrace

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// st is a function's self and total time (ns) and self count, worked out
// here independently of the analysis package: total counts a function
// once per sample.
type st struct{ self, total, count int64 }

func selfTotal(p *profile.Profile) map[string]st {
	out := map[string]st{}
	for _, s := range p.Sample {
		seen := map[string]bool{}
		for i, l := range s.Location {
			for _, ln := range l.Line {
				n := ln.Function.Name
				v := out[n]
				if i == 0 {
					v.self += s.Value[1]
					v.count += s.Value[0]
				}
				if !seen[n] {
					seen[n] = true
					v.total += s.Value[1]
				}
				out[n] = v
			}
		}
	}
	return out
}

func checkWarnings(t *testing.T, p *profile.Profile, want []string) {
	t.Helper()
	got := pbuild.Warnings(p)
	for _, w := range want {
		found := false
		for _, g := range got {
			if strings.Contains(g, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no warning containing %q in %q", w, got)
		}
	}
	if len(want) == 0 && len(got) > 0 {
		t.Errorf("unexpected warnings %q", got)
	}
}

func names(m map[string]st) []string {
	var n []string
	for k := range m {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
