package analysis_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/loaders"
)

// Synthetic is a function: what a caller does to the slice it returns
// changes neither the next call nor what Selection.DropSynthetic drops.
func TestSyntheticIsNotShared(t *testing.T) {
	s := analysis.Synthetic()
	want := []string{"(idle)", "(program)", "(garbage collector)", "(root)"}
	if !slices.Equal(s, want) {
		t.Fatalf("Synthetic() = %q, want %q", s, want)
	}
	s[0] = "main.main"
	if !slices.Equal(analysis.Synthetic(), want) {
		t.Errorf("changing the returned slice changed the synthetic names: %q", analysis.Synthetic())
	}
	p, err := loaders.Read(strings.NewReader("(idle) 5\nmain.main 3\n"), loaders.WithFormat(loaders.FormatFolded))
	if err != nil {
		t.Fatal(err)
	}
	tab, err := analysis.Functions(p, analysis.Selection{DropSynthetic: true})
	if err != nil {
		t.Fatal(err)
	}
	if tab.TotalSamples != 3 || len(tab.Functions) != 1 || tab.Functions[0].Name != "main.main" {
		t.Errorf("DropSynthetic kept %d samples, rows %+v; want main.main's 3", tab.TotalSamples, tab.Functions)
	}
}
