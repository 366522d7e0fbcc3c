package analysis_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// A profile whose capture lost samples says so through its index's
// warnings (which the CLI prints for every profile it reads); one that
// lost none, or did not measure, says nothing.
func TestIndexWarnsOfLostSamples(t *testing.T) {
	ms := int64(time.Millisecond)
	for _, tc := range []struct {
		rec  *meta.Record
		warn bool
	}{
		{&meta.Record{SampledNanos: 105 * ms, UsedNanos: 437 * ms}, true},
		{&meta.Record{SampledNanos: 400 * ms, UsedNanos: 437 * ms}, false},
		{nil, false},
	} {
		p := handProfile()
		if tc.rec != nil {
			meta.Set(p, *tc.rec)
		}
		x, err := analysis.NewIndex(p)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(x.Warnings(), "\n")
		if strings.Contains(got, "samples were lost") != tc.warn {
			t.Errorf("record %+v: warnings %q", tc.rec, got)
		}
	}
}
