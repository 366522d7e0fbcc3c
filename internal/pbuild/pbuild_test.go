package pbuild

import (
	"fmt"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/meta"
)

func TestBuilderMergesAndValidates(t *testing.T) {
	b := New(Sampled)
	main := b.Location(Frame{Name: "main", File: "m.go", StartLine: 1, Line: 3})
	work := b.Location(Frame{Name: "work", File: "m.go", StartLine: 10, Line: 12})
	work2 := b.Location(Frame{Name: "work", File: "m.go", StartLine: 10, Line: 14}) // same function, other line
	if b.Location(Frame{Name: "main", File: "m.go", StartLine: 1, Line: 3}) != main {
		t.Fatal("identical frames must intern to one location")
	}
	l1, l2 := NewLabels(LabelTID, "1", LabelThread, ""), NewLabels(LabelTID, "2")
	b.Add(stack(work, main), 1, 10, l1)
	b.Add(stack(work, main), 2, 20, l1) // merged
	b.Add(stack(work, main), 1, 10, l2) // other labels: kept apart
	b.Add(stack(work2, main), 1, 5, nil)
	b.Warnf("dropped sample %d", 1)
	b.Warnf("dropped sample %d", 1)
	p, err := b.Finish("test", 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != 3 || p.Sample[0].Value[0] != 3 || p.Sample[0].Value[1] != 30 {
		t.Errorf("samples not merged as expected: %v", p)
	}
	if len(p.Function) != 2 || len(p.Location) != 3 {
		t.Errorf("%d functions, %d locations; want 2 and 3", len(p.Function), len(p.Location))
	}
	if _, ok := p.Sample[0].Label[LabelThread]; ok {
		t.Error("empty label values must be skipped")
	}
	if w := Warnings(p); len(w) != 1 || w[0] != "dropped sample 1 (2 times)" {
		t.Errorf("warnings = %q", w)
	}
	if IsExact(p) || p.Period != 10 || p.DurationNanos != 100 {
		t.Errorf("exact %v period %d duration %d", IsExact(p), p.Period, p.DurationNanos)
	}
	if meta.Format(p.Comments) != "test" {
		t.Errorf("format comment missing: %q", p.Comments)
	}
}

func stack(l ...*profile.Location) []*profile.Location { return l }

func TestExactAndWarningCap(t *testing.T) {
	b := New(Exact)
	for i := 0; i < MaxWarnings+7; i++ {
		b.Warnf("warning %d", i)
	}
	p, err := b.Finish("", 0, -5)
	if err != nil {
		t.Fatal(err)
	}
	if !IsExact(p) || p.SampleType[1].Type != "wall" || p.DurationNanos != 0 {
		t.Errorf("exact profile: %v", p.SampleType)
	}
	w := Warnings(p)
	if len(w) != MaxWarnings+1 || w[MaxWarnings] != fmt.Sprintf("%d more distinct warnings not shown", 7) {
		t.Errorf("got %d warnings, last %q", len(w), w[len(w)-1])
	}
}

func TestMedianDelta(t *testing.T) {
	for _, tc := range []struct {
		in   []int64
		want int64
	}{
		{nil, 0}, {[]int64{5}, 0}, {[]int64{0, 10, 20, 30}, 10},
		{[]int64{30, 0, 20, 10}, 10},        // unsorted input
		{[]int64{0, 0, 0}, 0},               // no positive deltas
		{[]int64{0, 1, 101, 201, 301}, 100}, // one short gap does not move the median
	} {
		if got := MedianDelta(tc.in); got != tc.want {
			t.Errorf("MedianDelta(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestMedian(t *testing.T) {
	v := []int64{5, 1, 4, 2}
	if got := Median(v); got != 4 {
		t.Errorf("Median(5 1 4 2) = %d, want the upper median 4", got)
	}
	if v[0] != 5 || v[3] != 2 {
		t.Errorf("Median sorted its input: %v", v)
	}
	if got := Median([]int64{3, 9, 7}); got != 7 {
		t.Errorf("Median(3 9 7) = %d, want 7", got)
	}
	if got := Median(nil); got != 0 {
		t.Errorf("Median(nil) = %d", got)
	}
}
