package analysis_test

import (
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/synth"
	"github.com/hotbudget/hotbudget/loaders"
)

// Functions, now built on the index, equals the implementation it replaced
// on every input of the repository's testdata, on synthetic profiles with
// labels, inlining and unsymbolized frames, and on profiles that fail
// CheckValid, under every selection option, errors included.
func TestFunctionsEqualsReference(t *testing.T) {
	inputs := map[string]*profile.Profile{}
	files, _ := filepath.Glob("../testdata/*/*")
	for _, f := range files {
		switch filepath.Ext(f) {
		case ".gz", ".cpuprofile", ".json", ".trace", ".folded":
		default:
			continue
		}
		p, err := loaders.Load(f)
		if err != nil {
			continue // the bad inputs of the CLI tests
		}
		inputs[f] = p
	}
	if len(inputs) < 15 {
		t.Fatalf("only %d inputs loaded", len(inputs))
	}
	for i, s := range []synth.Spec{
		{Functions: 50, Stacks: 80, MinDepth: 1, MaxDepth: 6, Seed: 11, Labels: true},
		{Functions: 2000, Stacks: 5000, MinDepth: 8, MaxDepth: 24, Seed: 12, Labels: true},
	} {
		inputs[fmt.Sprint("synth", i)] = synth.Profile(s)
	}
	// Hand-made profiles that CheckValid rejects but analysis reads: a line
	// without a function, a sample with too few values, and synthetic leaves.
	fn := &profile.Function{ID: 1, Name: "work", Filename: "w.go"}
	gc := &profile.Function{ID: 2, Name: "(garbage collector)"}
	l1 := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn, Line: 4}, {Line: 9}}}
	l2 := &profile.Location{ID: 2, Line: []profile.Line{{Function: gc}}}
	odd := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{l1}, Value: []int64{1, 10}, Label: map[string][]string{"thread": {"main"}}},
			{Location: []*profile.Location{l2, l1}, Value: []int64{2, 20}},
			{Location: []*profile.Location{l2}, Value: []int64{3}},
		},
	}
	inputs["odd"] = odd

	thread := func(p *profile.Profile) string {
		for _, s := range p.Sample {
			for _, k := range []string{pbuild.LabelThread, pbuild.LabelTID} {
				if v := s.Label[k]; len(v) > 0 {
					return v[0]
				}
			}
		}
		return "none"
	}
	for name, p := range inputs {
		sels := []analysis.Selection{
			{},
			{DropSynthetic: true},
			{Threads: []string{thread(p)}},
			{Threads: []string{thread(p), "nobody"}, DropSynthetic: true},
			{Processes: []string{"7787", "Renderer"}},
			{Focus: regexp.MustCompile(`a`)},
			{Ignore: regexp.MustCompile(`^runtime\.|e$`)},
			{Focus: regexp.MustCompile(`o`), Ignore: regexp.MustCompile(`x`), DropSynthetic: true},
			{SampleType: "cpu"},
			{SampleType: "samples"},
			{SampleType: "0"},
			{SampleType: "7"},
			{SampleType: "nothing"},
		}
		for i, sel := range sels {
			want, werr := analysis.ReferenceFunctions(p, sel)
			got, gerr := analysis.Functions(p, sel)
			if fmt.Sprint(werr) != fmt.Sprint(gerr) {
				t.Errorf("%s, selection %d (%s): error %v, want %v", name, i, sel, gerr, werr)
				continue
			}
			if werr != nil {
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, selection %d (%s): tables differ\n got %+v\nwant %+v", name, i, sel, head(got), head(want))
			}
		}
	}
}

func head(t *analysis.Table) analysis.Table {
	c := *t
	if len(c.Functions) > 3 {
		c.Functions = c.Functions[:3]
	}
	return c
}
