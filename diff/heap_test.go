package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/loaders"
)

func loadHeapRuns(t *testing.T, prefix string) []*profile.Profile {
	t.Helper()
	var out []*profile.Profile
	for i := 1; i <= 5; i++ {
		p, err := loaders.Load(fmt.Sprintf("../testdata/heap/diff/%s-%d.pb.gz", prefix, i))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestHeapAAandAB judges real Go heap profiles sampled at the runtime's
// default rate (testdata/heap/diff: five runs of testdata/heap/gen a side)
// by their allocated bytes: the head's main.encode allocates one more
// 128-byte buffer per call (+50% of its bytes) and is the one function
// flagged; two sets of runs of the same program flag nothing, either way.
// The counts behind the values are the allocations the runtime sampled
// (about 130 a run), not its estimate of all of them, so the noise model
// sees how few they are.
func TestHeapAAandAB(t *testing.T) {
	base, same, head := loadHeapRuns(t, "base"), loadHeapRuns(t, "same"), loadHeapRuns(t, "head")
	sel := WithSelection(analysis.Selection{SampleType: "alloc_space"})
	ab, err := Compare(base, head, sel)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range ab.Regressions() {
		names = append(names, r.Name)
	}
	if !reflect.DeepEqual(names, []string{"main.encode"}) {
		t.Errorf("A/B: regressions %v, want [main.encode]", names)
	}
	if ab.Base.Unit != analysis.UnitBytes || ab.Base.Samples > 1000 || ab.Base.Samples < 300 {
		t.Errorf("A/B: base unit %q, %d samples in 5 runs: want bytes and the ~130 sampled allocations a run", ab.Base.Unit, ab.Base.Samples)
	}
	for _, pair := range [][2][]*profile.Profile{{base, same}, {same, base}} {
		aa, err := Compare(pair[0], pair[1], sel)
		if err != nil {
			t.Fatal(err)
		}
		if r := aa.Regressions(); len(r) != 0 {
			t.Errorf("A/A: %d regressions, first %s", len(r), r[0].Name)
		}
	}

	var text, js bytes.Buffer
	if err := ab.writeText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MiB total per run", "compared: self bytes as share of the profile", "headline: bytes per run "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	if err := ab.writeJSON(&js); err != nil {
		t.Fatal(err)
	}
	// Values carry their unit: the sides say bytes, the values sit under
	// the keys a time's do, and the only keys that name nanoseconds are
	// the two that are always times (the period, 0 here, and the minimum
	// absolute change, a setting).
	var back struct {
		Base, Head struct {
			Unit  string `json:"unit"`
			Total *int64 `json:"total"`
		}
		Functions []struct {
			Base struct {
				Self, Total *int64
			}
		}
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON report does not parse: %v", err)
	}
	if back.Base.Unit != "bytes" || back.Head.Unit != "bytes" || back.Base.Total == nil || *back.Base.Total != ab.Base.Total ||
		len(back.Functions) == 0 || back.Functions[0].Base.Self == nil || back.Functions[0].Base.Total == nil {
		t.Errorf("JSON report: sides' unit and total, functions' self and total: %+v\n%.800s", back.Base, js.String())
	}
	var keys func(v any, at string)
	keys = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if strings.HasSuffix(k, "_ns") && k != "period_ns" && k != "min_absolute_ns" || strings.HasSuffix(k, "_bytes") || strings.HasSuffix(k, "_count") {
					t.Errorf("JSON report key %s%s names a unit", at, k)
				}
				keys(e, at+k+".")
			}
		case []any:
			for _, e := range v {
				keys(e, at)
			}
		}
	}
	var doc any
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	keys(doc, "")

	cpu, err := loaders.Load("../testdata/pprof/busy.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compare(base[:1], []*profile.Profile{cpu}); err == nil || !strings.Contains(err.Error(), "not comparable") {
		t.Errorf("bytes against time: err = %v, want not comparable", err)
	}
}
