package diff_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/diff"
)

// One run a side of a few samples is no evidence about the time per unit
// of work: `record --runs 1` called "time per op +108.7%" a regression
// from 23 samples against 48 (most of them setup outside the timed
// loop). The headline says it cannot judge; with enough samples the same
// doubling is judged.
func TestHeadlineFewSamplesOneRunNotJudged(t *testing.T) {
	prof := func(main, work int) string {
		return fmt.Sprintf("main;setup %d\nmain;work %d\n", main, work)
	}
	few := compare(t, one(folded(t, prof(13, 10))), one(folded(t, prof(13, 35))), diff.WithSameWork())
	if h := few.Headline; h.Judged || h.Verdict != diff.Unchanged || !strings.Contains(h.Reason, "23 and 48 samples") {
		t.Errorf("23 vs 48 samples: headline %+v, want not judged, saying the samples", h)
	}
	if few.Failed() && len(few.Regressions()) == 0 {
		t.Error("23 vs 48 samples failed the gate on the headline")
	}
	many := compare(t, one(folded(t, prof(1300, 1000))), one(folded(t, prof(1300, 3500))), diff.WithSameWork())
	if h := many.Headline; !h.Judged || h.Verdict != diff.Regressed {
		t.Errorf("2300 vs 4800 samples: headline %+v, want judged regressed", h)
	}
	// The headline's figures say what they are, beside the sides' means.
	var b bytes.Buffer
	if err := many.Write(&b, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "total per run (mean)") || !strings.Contains(b.String(), "time per run (geometric mean over runs)") {
		t.Errorf("side lines and headline do not say which mean they show:\n%s", b.String())
	}
}

// Power advice never contradicts the flag beside it: a regression found
// below the size the runs catch 4 times in 5 is called found, in words,
// and only suspicious rows are said not shown to be slower.
func TestPowerAdviceAgreesWithVerdicts(t *testing.T) {
	for _, c := range []struct{ base, head string }{
		{"regress/base-*.pb.gz", "regress/head-*.pb.gz"},
		{"regress/base-1.pb.gz", "regress/head-1.pb.gz"},
		{"verdict/go-app/A-0[1-3].pb.gz", "verdict/go-app/B-0[1-3].pb.gz"},
	} {
		rep := compare(t, loadGlob(t, "../testdata/"+c.base), loadGlob(t, "../testdata/"+c.head))
		var b bytes.Buffer
		if err := rep.Write(&b, "text"); err != nil {
			t.Fatal(err)
		}
		text := b.String()
		i := strings.Index(text, "\npower (")
		if i < 0 {
			continue
		}
		lines := 0
		for _, line := range strings.Split(text[i+1:], "\n")[1:] {
			if !strings.HasPrefix(line, "  ") {
				break
			}
			lines++
			line = strings.TrimSpace(line)
			name, rest, _ := strings.Cut(line, ": ")
			var row *diff.Row
			for k := range rep.Rows {
				if rep.Rows[k].Name == name {
					row = &rep.Rows[k]
				}
			}
			if row == nil {
				continue // the headline's line
			}
			m := regexp.MustCompile(`slowdown of (\d+\.\d)% or more|below the (\d+\.\d)%`).FindStringSubmatch(rest)
			if m == nil {
				t.Errorf("%s: power line names no size: %q", c.head, line)
				continue
			}
			size, _ := strconv.ParseFloat(m[1]+m[2], 64)
			switch {
			case row.Verdict == diff.Regressed && !strings.HasPrefix(rest, fmt.Sprintf("regressed %+.1f%%", 100*row.Relative)):
				t.Errorf("%s: %s regressed, its power line %q does not say so first", c.head, name, line)
			case row.Verdict == diff.Regressed && size > 100*row.Relative && !strings.Contains(rest, "may well miss it"):
				t.Errorf("%s: %s regressed %+.1f%% beside a detectable size of %.1f%% without saying how both hold: %q", c.head, name, 100*row.Relative, size, line)
			case row.Verdict != diff.Regressed && strings.Contains(rest, "regressed"):
				t.Errorf("%s: %s is %s, its power line says regressed: %q", c.head, name, row.Verdict, line)
			}
		}
		if lines == 0 {
			t.Errorf("%s: a power header without lines", c.head)
		}
	}
}

// A call path's part of the change comes from the figures it is shown
// with: a path shown "+0.0%" takes no part of it, a path of nothing on
// both sides none, and the parts add up to the function's change.
func TestPathPartsAgreeWithPathChanges(t *testing.T) {
	total := 0
	for _, c := range []struct{ base, head string }{
		{"regress/base-*.pb.gz", "regress/head-*.pb.gz"},
		{"verdict/go-app/A-0[1-5].pb.gz", "verdict/go-app/B-0[1-5].pb.gz"},
		{"verdict/node-lib/A-1000us-0[1-5].cpuprofile.gz", "verdict/node-lib/B-1000us-0[1-5].cpuprofile.gz"},
	} {
		rep := compare(t, loadGlob(t, "../testdata/"+c.base), loadGlob(t, "../testdata/"+c.head))
		var js bytes.Buffer
		if err := rep.Write(&js, "json"); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Functions []struct {
				Name     string
				Relative float64
				Explain  *struct {
					Paths []struct {
						Base, Head, Relative, Share, Delta float64
						BaseMean                           float64 `json:"base_mean"`
						HeadMean                           float64 `json:"head_mean"`
						Verdict                            string
					}
				}
			}
		}
		if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		explained := 0
		for _, f := range doc.Functions {
			if f.Explain == nil {
				continue
			}
			explained++
			var sum float64
			for _, p := range f.Explain.Paths {
				part := f.Relative * p.Share
				sum += part
				shown := fmt.Sprintf("%+.1f%%", 100*p.Relative)
				if (shown == "+0.0%" || shown == "-0.0%") && p.Base > 0 && abs(part) >= 0.0005 {
					t.Errorf("%s: a path shown %s takes %+.1f%% of the change", f.Name, shown, 100*part)
				}
				if p.BaseMean == 0 && p.HeadMean == 0 && part != 0 {
					t.Errorf("%s: a path of nothing on both sides takes %+.1f%% of the change", f.Name, 100*part)
				}
				if p.Verdict == "regressed" && !(p.Delta > 0 && p.Relative > 0) || p.Verdict == "improved" && !(p.Delta < 0 && p.Relative < 0) {
					t.Errorf("%s: a path %s with change %+.1f%%, delta %v", f.Name, p.Verdict, 100*p.Relative, p.Delta)
				}
			}
			if abs(sum-f.Relative) > 1e-9 {
				t.Errorf("%s: parts add up to %+.3f%%, the change is %+.3f%%", f.Name, 100*sum, 100*f.Relative)
			}
		}
		total += explained
	}
	if total == 0 {
		t.Error("nothing explained")
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// The flame graph judges the frames of the functions the table judged,
// in families of their own function's paths: with --only the other
// functions' frames are not tested (they once were, 723 of them, and
// their correction left a regressed function's frame "within the noise").
func TestFlameFollowsOnly(t *testing.T) {
	rep := compare(t, loadGlob(t, "../testdata/regress/base-*.pb.gz"), loadGlob(t, "../testdata/regress/head-*.pb.gz"),
		diff.WithOnly(regexp.MustCompile(`^main\.(renderReport|writeLog)$`)))
	var page bytes.Buffer
	if err := rep.Write(&page, "html"); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="hb-data">(.*?)</script>`).FindStringSubmatch(page.String())
	if m == nil {
		t.Fatal("no flame graph data")
	}
	var d struct {
		Names  []string
		Name   []int
		Tested struct{ I, Sig []int }
	}
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatal(err)
	}
	sig := 0
	for k, i := range d.Tested.I {
		name := d.Names[d.Name[i]]
		if name != "main.renderReport" && name != "main.writeLog" {
			t.Errorf("frame of %s tested, outside --only", name)
		}
		if name == "main.renderReport" && d.Tested.Sig[k] == 1 {
			sig++
		}
	}
	if len(d.Tested.I) == 0 || sig == 0 {
		t.Errorf("%d frames tested, %d of main.renderReport (regressed in the table) counted", len(d.Tested.I), sig)
	}
	if v := rowOf(t, rep, "main.renderReport").Verdict; v != diff.Regressed {
		t.Errorf("main.renderReport %s", v)
	}
}
