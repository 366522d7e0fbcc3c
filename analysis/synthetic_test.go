package analysis_test

import (
	"slices"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
)

// Synthetic is a function: what a caller does to the slice it returns
// changes neither the next call nor IsSynthetic.
func TestSyntheticIsNotShared(t *testing.T) {
	s := analysis.Synthetic()
	want := []string{"(idle)", "(program)", "(garbage collector)", "(root)"}
	if !slices.Equal(s, want) {
		t.Fatalf("Synthetic() = %q, want %q", s, want)
	}
	s[0] = "main.main"
	if !slices.Equal(analysis.Synthetic(), want) || !analysis.IsSynthetic("(idle)") || analysis.IsSynthetic("main.main") {
		t.Errorf("changing the returned slice changed the synthetic names: %q", analysis.Synthetic())
	}
}
