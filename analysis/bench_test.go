package analysis_test

import (
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/synth"
)

// BenchmarkFunctions50k computes the table of a parsed profile of 50,000
// functions and 200,000 stacks of depth 8 to 24 (synth.Big): the work
// analysis does after a loader has run.
func BenchmarkFunctions50k(b *testing.B) {
	p := synth.Profile(synth.Big)
	b.ReportAllocs()
	for b.Loop() {
		t, err := analysis.Functions(p)
		if err != nil {
			b.Fatal(err)
		}
		if len(t.Functions) < 40000 {
			b.Fatalf("%d functions", len(t.Functions))
		}
	}
}
