package testutil

import (
	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/meta"
)

// CountProfile builds one process's exact capture of counted
// instructions over work iterations: each function's self count, by
// name, on a stack of its own, as perfassert.Instructions records it.
func CountProfile(work float64, self map[string]int64) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "instructions", Unit: "count"}}, Period: 1,
		PeriodType: &profile.ValueType{Type: "instructions", Unit: "count"}}
	for name, v := range self {
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, l)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l}, Value: []int64{v},
			Label: map[string][]string{meta.LabelRun: {"1"}}})
	}
	p.Comments = meta.MarkExact(nil)
	meta.Set(p, meta.Record{Name: "capture", Instrument: "callgrind test", WorkUnit: meta.WorkIteration,
		Runs: []meta.Run{{Label: "1", Work: work}}})
	return p
}
