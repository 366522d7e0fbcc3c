package diff_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
)

// A change that removed an allocation from google/uuid's Parse: its
// benchmark got 67.5% faster and Parse's own samples grew (its share
// +216%, 8.39 to 14.45 ns an op by go tool pprof's flat over the ops,
// testdata/record/uuid-moved/README.md) while it executed the same
// instructions. Its growth is less than the op saved: a near miss, not a
// regression; without the headline (WithHeadline(false)) the same
// profiles fail it, so it is the rule that passes them.
func TestTimeMovedIn(t *testing.T) {
	base := loadGlob(t, "../testdata/record/uuid-moved/base/*.pb.gz")
	head := loadGlob(t, "../testdata/record/uuid-moved/head/*.pb.gz")
	gate := diff.WithGate(regexp.MustCompile(`^github\.com/google/uuid\.`))
	r := compare(t, base, head, gate)
	if r.Headline.Verdict != diff.Improved {
		t.Fatalf("headline %s, want improved (60 -> 20 ns an op)", r.Headline.Verdict)
	}
	parse := rowOf(t, r, "github.com/google/uuid.Parse")
	if parse.Verdict != diff.Unchanged || parse.Relative < 2 {
		t.Errorf("Parse %s %+.1f%%, want unchanged at about +216%%", parse.Verdict, 100*parse.Relative)
	}
	for _, want := range []string{"grew 6.05ns (8.39ns -> 14.45ns, +72.1%)", "got 40.67ns faster (60.28ns -> 19.60ns, -67.5%)", "time that moved into it"} {
		if !strings.Contains(parse.NearMiss, want) {
			t.Errorf("Parse's near miss %q does not say %q", parse.NearMiss, want)
		}
	}
	if r.Failed() || len(r.Regressions()) != 0 {
		t.Errorf("the report fails: %v", r.Regressions())
	}
	if v := rowOf(t, compare(t, base, head, gate, diff.WithHeadline(false)), "github.com/google/uuid.Parse").Verdict; v != diff.Regressed {
		t.Errorf("without the headline Parse is %s, want regressed (its share tripled)", v)
	}
}

// The rule by hand, 1 ms a sample, five runs a side of equal work: base
// f 100, g 600, h 300 (1 s a run). Head drops g: f grows 50 ms against
// 550 ms saved (a near miss), or 400 ms against 200 ms saved (regressed:
// it grew more than the run saved). Without equal work declared the
// headline is not judged and f's share decides alone.
func TestTimeMovedInByHand(t *testing.T) {
	runs := func(f, g, h int) []*profile.Profile {
		var ps []*profile.Profile
		for i := range 5 {
			text := fmt.Sprintf("main;f %d\nmain;h %d\n", f+i%3, h+(i*7)%5)
			if g > 0 {
				text += fmt.Sprintf("main;g %d\n", g+i%2)
			}
			ps = append(ps, folded(t, text))
		}
		return ps
	}
	base := runs(100, 600, 300)
	for _, c := range []struct {
		f       int
		opts    []diff.Option
		want    diff.Verdict
		because string
	}{
		{150, []diff.Option{diff.WithSameWork()}, diff.Unchanged, "grew 50ms (100.80ms -> 150.80ms, +49.6%) while the whole run got 550.40ms faster (1s -> 452.80ms, -54.9%)"},
		{500, []diff.Option{diff.WithSameWork()}, diff.Regressed, ""},
		{150, nil, diff.Regressed, ""},
	} {
		r := compare(t, base, runs(c.f, 0, 300), c.opts...)
		f := rowOf(t, r, "f")
		if f.Verdict != c.want || !strings.Contains(f.NearMiss, c.because) {
			t.Errorf("f 100 -> %d ms with %d options: %s (%q), want %s (%q)", c.f, len(c.opts), f.Verdict, f.NearMiss, c.want, c.because)
		}
	}
}
