package analysis_test

import (
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/loaders"
)

// DropSynthetic drops the samples whose leaf is a synthetic frame, from
// the rows and the total.
func TestDropSynthetic(t *testing.T) {
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
