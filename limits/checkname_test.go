package limits

import "testing"

// Every quantity names its assertion; "Check" would mean that
// internal/checkname lacks a quantity's words.
func TestCheckNameKnowsEveryQuantity(t *testing.T) {
	for _, q := range []Quantity{SelfTime, TotalTime, SelfShare, TotalShare, SelfAllocs, TotalAllocs,
		SelfAllocBytes, TotalAllocBytes, SelfInstructions, TotalInstructions} {
		if n := q.checkName(); n == "Check" || n == "" {
			t.Errorf("%q names no assertion", q)
		}
	}
}
