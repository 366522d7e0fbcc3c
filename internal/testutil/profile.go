package testutil

import (
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/index"
)

// CheckProfile fails t unless p is a valid profile whose per-function
// times, as analysis counts them, add up: no self time below zero, no
// total below its self time, and the self times summing to the total of
// the samples. what names p in the failure.
func CheckProfile(t testing.TB, what string, p *profile.Profile) {
	t.Helper()
	if err := p.CheckValid(); err != nil {
		t.Fatalf("%s: invalid profile: %v", what, err)
	}
	x, err := index.FromProfile(p)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	s, err := x.Sum(index.Selection{})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var self int64
	for _, f := range s.Order {
		self += s.Self[f]
		if s.Self[f] < 0 || s.Tot[f] < s.Self[f] {
			t.Fatalf("%s: %s: self %d total %d", what, x.Funcs[f].Name, s.Self[f], s.Tot[f])
		}
	}
	if self != s.Total {
		t.Fatalf("%s: self times sum to %d, total %d", what, self, s.Total)
	}
}
