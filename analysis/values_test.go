package analysis_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/loaders"
)

// TestIndexRefusesValuesItCannotSum: both ways to an Index (a profile in
// memory, and the fast path from a pprof file's bytes) refuse a negative
// sample value and values whose total overflows int64, which gave a total
// of -2562047.79hrs and shares of -150%.
func TestIndexRefusesValuesItCannotSum(t *testing.T) {
	ok := testutil.Sample{Stack: []string{"main.main", "main.ok"}, Nanos: 200e6}
	tests := []struct {
		name string
		p    *profile.Profile
		want string
	}{
		{"negative", testutil.TimeProfile(ok, testutil.Sample{Stack: []string{"main.main", "main.neg"}, Nanos: -300e6}),
			"sample 1 has a negative samples/count value, -30"},
		{"overflow", testutil.TimeProfile(
			testutil.Sample{Stack: []string{"main.main", "main.a"}, Nanos: 1 << 62},
			testutil.Sample{Stack: []string{"main.main", "main.b"}, Nanos: 1 << 62}),
			"sample 1: the cpu/nanoseconds values add up to more than 9223372036854775807 nanoseconds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := analysis.NewIndex(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewIndex: %v, want %q", err, tc.want)
			}
			var buf bytes.Buffer
			if err := tc.p.Write(&buf); err != nil {
				t.Fatal(err)
			}
			if _, err := loaders.ReadIndex(&buf); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("loaders.ReadIndex: %v, want %q", err, tc.want)
			}
			if _, err := analysis.Functions(tc.p); err == nil {
				t.Error("Functions summed the profile")
			}
		})
	}
	// Right up to the limit is summed exactly.
	p := testutil.TimeProfile(
		testutil.Sample{Stack: []string{"main.main", "main.a"}, Nanos: 1 << 62},
		testutil.Sample{Stack: []string{"main.main", "main.b"}, Nanos: 1<<62 - 1})
	tab, err := analysis.Functions(p)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Total != 1<<63-1 || tab.Find("main.main")[0].Total != 1<<63-1 {
		t.Errorf("total %d, main.main %d; want %d", tab.Total, tab.Find("main.main")[0].Total, int64(1<<63-1))
	}
}
