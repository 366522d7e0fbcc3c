package budget

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/loaders"
)

// TestInstructionLimits: a budget bounds counted instructions, per op and
// in all, as perfassert's MaxSelfInstructions and MaxTotalInstructions do,
// on a real counted baseline (examples/baseline: five processes of one
// iteration of examples/capture.Parse each; Parse's self count is 780,367
// an iteration, normalizeKey's total 12,085,916). A time limit on counts,
// and an instruction limit on a CPU profile, are errors, not passes.
func TestInstructionLimits(t *testing.T) {
	b, err := Parse("i.yaml", []byte(`version: 1
rules:
  - function: github.com/hotbudget/hotbudget/examples/capture.Parse
    max_self_instructions_per_op: 800000
  - function: github.com/hotbudget/hotbudget/examples/capture.normalizeKey
    max_total_instructions_per_op: 12000000
  - function: github.com/hotbudget/hotbudget/examples/capture.Parse
    max_self_instructions: 4000000
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := loaders.Load("../examples/baseline/testdata/go1.26/parse.instructions.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(b, []*profile.Profile{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		pass bool
		unit string
		got  float64
	}{{true, "instructions/op", 780367}, {false, "instructions/op", 12085916}, {true, "instructions", 5 * 780367}}
	if len(res.Checks) != len(want) {
		t.Fatalf("%d checks, want %d", len(res.Checks), len(want))
	}
	for i, w := range want {
		c := res.Checks[i]
		if c.Pass != w.pass || c.Unit != w.unit || c.Got != w.got {
			t.Errorf("check %d: pass %v, %v %s; want %v, %v %s (%s)", i, c.Pass, c.Got, c.Unit, w.pass, w.got, w.unit, c.Message)
		}
	}
	if _, err := Parse("bad.yaml", []byte("version: 1\nrules:\n  - function: f\n    max_self_instructions: 1.5\n")); err == nil || !strings.Contains(err.Error(), "whole number of instructions") {
		t.Errorf("a fraction of an instruction: %v", err)
	}
	timed, err := Parse("t.yaml", []byte("version: 1\nrules:\n  - function: github.com/hotbudget/hotbudget/examples/capture.Parse\n    max_self: 1ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(timed, []*profile.Profile{p}, nil); err == nil || !strings.Contains(err.Error(), "MaxSelfInstructions") {
		t.Errorf("a time limit on counts: %v, want an error naming the instruction limits", err)
	}
	cpu, err := loaders.Load("../testdata/pprof/busy.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(b, []*profile.Profile{cpu}, nil); err == nil {
		t.Error("an instruction limit on a CPU profile passed")
	}
}
