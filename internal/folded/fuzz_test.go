package folded

import (
	"bytes"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// FuzzParse checks that Parse never panics and that whatever it accepts is
// valid and survives Write and Parse with the same samples per function.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		handInput,
		"a;b;c 1\n",
		"# c\n\nmain;x y z\t42\r\n",
		"a 0\n",
		"a;;b 1\n",
		"a;b\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, ok := testutil.ParseValid(t, Parse, data)
		if !ok {
			return
		}
		want, err := analysis.Functions(p)
		if err != nil {
			t.Fatal(err)
		}
		q, written, err := testutil.Rewrite(t, Parse, Write, p)
		out := string(written)
		if err != nil {
			if want.TotalSamples == 0 && err.Error() == "no stacks" {
				return // all counts were 0
			}
			t.Fatalf("Parse of written stacks: %v\n%q", err, out)
		}
		got, err := analysis.Functions(q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Total != want.Total || got.TotalSamples != want.TotalSamples {
			t.Fatalf("total %v (%d) after the round trip, want %v (%d)\n%q", got.Total, got.TotalSamples, want.Total, want.TotalSamples, out)
		}
		wm := make(map[string][2]int64)
		for _, r := range want.Functions {
			wm[r.Name] = [2]int64{r.SelfSamples, r.TotalSamples}
		}
		for _, r := range got.Functions {
			if w := wm[r.Name]; w != [2]int64{r.SelfSamples, r.TotalSamples} {
				t.Fatalf("%q: samples %d/%d after the round trip, want %v\n%q", r.Name, r.SelfSamples, r.TotalSamples, w, out)
			}
		}
		var again bytes.Buffer
		if err := Write(&again, q); err != nil || again.String() != out {
			t.Fatalf("second Write differs (%v):\n%q\n%q", err, again.String(), out)
		}
	})
}
