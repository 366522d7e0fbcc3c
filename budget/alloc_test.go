package budget

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/limits"
	"github.com/hotbudget/hotbudget/loaders"
)

func TestAllocLimitsParse(t *testing.T) {
	b, err := Parse("a.yaml", []byte(`version: 1
defaults:
  sample_type: alloc_space
rules:
  - function: f
    max_allocs: 12
    max_total_allocs: 0
    sample_type: alloc_objects
  - function: g
    max_alloc_bytes: 1.5KiB
    max_total_alloc_bytes: 2MB
  - function: h
    max_alloc_bytes: 512B
`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range b.Rules {
		for _, l := range r.Limits {
			k, _ := l.key()
			got[k] = l.value()
		}
	}
	if got["max_allocs"] != 12 || got["max_total_allocs"] != 0 || got["max_total_alloc_bytes"] != 2e6 || got["max_alloc_bytes"] != 512 {
		t.Errorf("limits %v", got)
	}
	if b.Rules[1].Limits[0].Bound != (limits.Limit{Quantity: limits.SelfAllocBytes, Count: 1536}) {
		t.Errorf("1.5KiB = %v", b.Rules[1].Limits[0].Bound)
	}
	if b.Rules[0].Selection.SampleType != "alloc_objects" || b.Rules[1].Selection.SampleType != "alloc_space" {
		t.Errorf("sample types %q %q", b.Rules[0].Selection.SampleType, b.Rules[1].Selection.SampleType)
	}
	if _, u := b.Rules[0].Limits[0].key(); u != "objects" {
		t.Error("units")
	}
	_, err = Parse("bad.yaml", []byte(`version: 1
rules:
  - function: f
    max_alloc_bytes: 4096
  - function: g
    max_allocs: -1
  - function: h
    max_allocs: 12k
  - function: i
    max_total_alloc_bytes: 4 parsecs
  - function: j
    max_allocs: 1
    sample_type: ""
`))
	for _, want := range []string{
		"bad.yaml:4: max_alloc_bytes: 4096 has no unit: write a size such as 4096B or 4096KiB",
		"bad.yaml:6: max_allocs must be a whole number of objects",
		"bad.yaml:8: max_allocs must be a whole number of objects",
		"bad.yaml:10: max_total_alloc_bytes must be a size such as 512B",
		"bad.yaml:13: sample_type must not be empty",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}

// TestAllocLimitsCheck checks testdata/budget/heap.yaml against the real
// heap profile it was written for, each limit as the perfassert assertion
// that bounds the same quantity, and a broken limit and a CPU profile.
func TestAllocLimitsCheck(t *testing.T) {
	b, err := Load("../testdata/budget/heap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := loaders.Load("../testdata/heap/heap.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(b, []*profile.Profile{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed() || len(res.Checks) != 3 {
		t.Fatalf("heap.yaml: %+v", res)
	}
	for i, c := range res.Checks {
		r := &b.Rules[map[int]int{0: 0, 1: 0, 2: 1}[i]]
		l := r.Limits[map[int]int{0: 0, 1: 1, 2: 0}[i]]
		sel, opts := assertion(r, l)
		want, err := limits.Check(p, sel, l.Bound, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if c.Message != want.Summary() || c.Got != float64(want.Value) {
			t.Errorf("%s: %q (got %v), the assertion says %q (%v)", c.Check, c.Message, c.Got, want.Summary(), float64(want.Value))
		}
	}
	// go tool pprof -top -sample_index=alloc_space: main.encode 47.01MB
	// flat (49295104 bytes; -sample_index=alloc_objects: 192559).
	if c := res.Checks[0]; c.Unit != "bytes" || c.Got != 49295104 || !strings.Contains(c.Message, "47.01MiB") {
		t.Errorf("max_alloc_bytes: %+v", c)
	}
	if c := res.Checks[1]; c.Unit != "objects" || c.Got != 192559 {
		t.Errorf("max_allocs: %+v", c)
	}

	tight, err := Parse("tight.yaml", []byte("version: 1\nrules:\n  - function: main.encode\n    max_allocs: 192558\n"))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := Check(tight, []*profile.Profile{p}, nil); err != nil || res.Passed() || !strings.Contains(res.Checks[0].Message, "want at most 192558 objects") {
		t.Errorf("one object over the limit: %+v, %v", res, err)
	}
	cpu, err := loaders.Load("../testdata/pprof/busy.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(b, []*profile.Profile{cpu}, nil); err == nil || !strings.Contains(err.Error(), "heap.yaml:8: perfassert: a limit on self allocated bytes needs an allocation profile with sample type alloc_space") {
		t.Errorf("CPU profile: err = %v", err)
	}
}
