package pbuild

import (
	"math"
	"strings"
	"testing"
)

func TestCheckedAdd(t *testing.T) {
	tests := []struct {
		a, b int64
		sum  int64
		ok   bool
	}{
		{0, 0, 0, true},
		{1 << 62, 1<<62 - 1, math.MaxInt64, true},
		{1 << 62, 1 << 62, 0, false},
		{math.MaxInt64, 1, 0, false},
		{math.MaxInt64, math.MaxInt64, 0, false},
		{-1, 1, 0, false},
		{5, -3, 0, false},
	}
	for _, tc := range tests {
		sum, ok := CheckedAdd(tc.a, tc.b)
		if sum != tc.sum || ok != tc.ok {
			t.Errorf("CheckedAdd(%d, %d) = %d, %v; want %d, %v", tc.a, tc.b, sum, ok, tc.sum, tc.ok)
		}
	}
}

func TestValueSums(t *testing.T) {
	cpu := []ValueType{{"samples", "count"}, {"cpu", "nanoseconds"}}
	tests := []struct {
		name    string
		types   []ValueType
		samples [][]int64
		sum     []int64
		err     string
	}{
		{"ordinary", cpu, [][]int64{{1, 10e6}, {3, 30e6}, {0, 0}}, []int64{4, 40e6}, ""},
		{"up to the largest int64", cpu, [][]int64{{1, 1 << 62}, {1, 1<<62 - 1}}, []int64{2, math.MaxInt64}, ""},
		{"two samples of 2^62 overflow", cpu, [][]int64{{1, 1 << 62}, {1, 1 << 62}}, nil,
			"sample 1: the cpu/nanoseconds values add up to more than 9223372036854775807 nanoseconds"},
		{"counts overflow too", cpu, [][]int64{{math.MaxInt64, 1}, {1, 1}}, nil,
			"sample 1: the samples/count values add up to more than 9223372036854775807,"},
		{"negative time", cpu, [][]int64{{1, 10}, {1, -300e6}}, nil,
			"sample 1 has a negative cpu/nanoseconds value, -300000000"},
		{"negative count", cpu, [][]int64{{-3, 10}}, nil, "sample 0 has a negative samples/count value, -3"},
		// 2^54 microseconds fit in int64, but not in nanoseconds.
		{"microseconds are summed as nanoseconds", []ValueType{{"cpu", "microseconds"}}, [][]int64{{1 << 54}}, nil,
			"sample 0: the cpu/microseconds values add up to more than 9223372036854775807 nanoseconds"},
		{"microseconds that fit", []ValueType{{"cpu", "microseconds"}}, [][]int64{{1000}, {2}}, []int64{1002000}, ""},
		{"a short sample reads as zeros", cpu, [][]int64{{1}, {2, 5}}, []int64{3, 5}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewValueSums(tc.types)
			var err error
			for i, v := range tc.samples {
				if err = s.Add(i, v); err != nil {
					break
				}
			}
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				for j := range tc.sum {
					if s.Sum[j] != tc.sum[j] {
						t.Errorf("Sum = %v, want %v", s.Sum, tc.sum)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}

// TestBuilderRefusesWhatItCannotSum: a loader that hands the Builder a
// negative value, or samples of one stack whose merged values overflow,
// gets an error from Finish instead of a profile whose sums wrap around.
func TestBuilderRefusesWhatItCannotSum(t *testing.T) {
	b := New(Sampled)
	main := b.Location(Frame{Name: "main"})
	b.Add(stack(main), 1, 1<<62, nil)
	b.Add(stack(main), 1, 1<<62, nil) // merged: 2^63 overflows
	if _, err := b.Finish("test", 0, 0); err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Errorf("merged overflow: err = %v", err)
	}
	b = New(Sampled)
	main = b.Location(Frame{Name: "main"})
	b.Add(stack(main), 1, -5, nil)
	if _, err := b.Finish("test", 0, 0); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative time: err = %v", err)
	}
}
