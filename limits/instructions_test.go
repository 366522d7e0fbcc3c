package limits

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// instrProfile is a capture of counted instructions over 10 iterations:
// main.run calls main.parse (600 self) and main.scan (300 self), and runs
// 100 itself.
func instrProfile() *profile.Profile {
	fn := func(id uint64, name string) *profile.Location {
		return &profile.Location{ID: id, Line: []profile.Line{{Function: &profile.Function{ID: id, Name: name}}}}
	}
	run, parse, scan := fn(1, "main.run"), fn(2, "main.parse"), fn(3, "main.scan")
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "instructions", Unit: "count"}},
		PeriodType: &profile.ValueType{Type: "instructions", Unit: "count"}, Period: 1,
		Sample: []*profile.Sample{
			{Location: []*profile.Location{run}, Value: []int64{100}},
			{Location: []*profile.Location{parse, run}, Value: []int64{600}},
			{Location: []*profile.Location{scan, run}, Value: []int64{300}},
		},
		Location: []*profile.Location{run, parse, scan},
	}
	for _, l := range p.Location {
		p.Function = append(p.Function, l.Line[0].Function)
	}
	p.Comments = meta.MarkExact(nil)
	meta.Set(p, meta.Record{Name: "capture", WorkUnit: meta.WorkIteration, Runs: []meta.Run{{Work: 10}}})
	return p
}

// TestInstructionLimits checks the instruction limits against counts
// worked out by hand: parse executes 60 instructions an iteration itself,
// run 100 in all.
func TestInstructionLimits(t *testing.T) {
	p := instrProfile()
	for _, c := range []struct {
		q    Quantity
		fn   string
		max  int64
		pass bool
		text string
	}{
		{SelfInstructions, "main.parse", 60, true, "main.parse self count 60 instructions per iteration (60.00% of 1000 instructions total over 10 iterations, exact), within 60 instructions"},
		{SelfInstructions, "main.parse", 59, false, "want at most 59 instructions"},
		{TotalInstructions, "main.run", 100, true, "main.run total count 100 instructions per iteration"},
		{TotalInstructions, "main.run", 99, false, "want at most 99 instructions"},
	} {
		r, err := Check(p, c.fn, Limit{Quantity: c.q, Count: c.max}, PerIteration())
		if err != nil {
			t.Fatalf("%s %s: %v", c.q, c.fn, err)
		}
		if r.Passed != c.pass || !strings.Contains(r.String(), c.text) {
			t.Errorf("%s %s <= %d: passed %v, want %v; text:\n%s\nwant it to hold %q", c.q, c.fn, c.max, r.Passed, c.pass, r, c.text)
		}
	}
	r, err := Check(p, "main.scan", Limit{Quantity: SelfShare, Share: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	if r.Passed || r.Share != 0.3 || !strings.Contains(r.String(), "self count 300 instructions (30.00% of 1000 instructions total, exact), share 30.00%") {
		t.Errorf("share of scan: passed %v share %v:\n%s", r.Passed, r.Share, r)
	}
	if _, err := Check(p, "main.scan", Limit{Quantity: SelfTime, Time: 1}); !errors.Is(err, analysis.ErrWrongUnit) || !strings.Contains(err.Error(), "MaxSelfInstructions") {
		t.Errorf("a time limit on counted instructions: %v", err)
	}
	cpu := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}}
	if _, err := Check(cpu, "main.scan", Limit{Quantity: SelfInstructions, Count: 1}); err == nil || !strings.Contains(err.Error(), "needs a profile of counted instructions") {
		t.Errorf("an instruction limit on a CPU profile: %v", err)
	}
}
