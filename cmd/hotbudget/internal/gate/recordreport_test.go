package gate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/loaders"
)

// recordReports judges two benchmarks as record does: in "A" the
// module's function slow takes 60% more time in head, "B" is unchanged.
func recordReports(t *testing.T) ([]*diff.Report, *bench.Report) {
	t.Helper()
	prof := func(text string) *profile.Profile {
		p, err := loaders.Read(strings.NewReader(text), loaders.WithFormat(loaders.FormatFolded))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var pairs []diff.Pair
	for _, name := range []string{"example.com/m BenchmarkB", "example.com/m BenchmarkA"} {
		pr := diff.Pair{Name: name}
		for i := range 5 {
			slow := 300 + 7*i
			if name == "example.com/m BenchmarkA" {
				pr.Head = append(pr.Head, prof(fmt.Sprintf("main;example.com/m.slow %d\nmain;example.com/m.fast %d\nmain;runtime.mallocgc %d\n", slow*16/10, 700-5*i, 100+i)))
			} else {
				pr.Head = append(pr.Head, prof(fmt.Sprintf("main;example.com/m.slow %d\nmain;example.com/m.fast %d\nmain;runtime.mallocgc %d\n", slow+3, 700-5*i, 100+i)))
			}
			pr.Base = append(pr.Base, prof(fmt.Sprintf("main;example.com/m.slow %d\nmain;example.com/m.fast %d\nmain;runtime.mallocgc %d\n", slow, 702-5*i, 101+i)))
		}
		pairs = append(pairs, pr)
	}
	funcs, err := diff.CompareEach(pairs, diff.WithMode(diff.Absolute), diff.WithGate(ModulePattern([]string{"example.com/m"})))
	if err != nil {
		t.Fatal(err)
	}
	benches, err := bench.Compare(strings.NewReader(""), strings.NewReader(""))
	if err != nil {
		benches = &bench.Report{}
	}
	return funcs, benches
}

// record's reports: one per benchmark, the failing one first, in every
// format; the exit status fails on it.
func TestRecordReportPerBenchmark(t *testing.T) {
	funcs, benches := recordReports(t)
	if !funcs[1].Failed() || funcs[0].Failed() {
		t.Fatalf("A failed %v, B failed %v: want A alone", funcs[1].Failed(), funcs[0].Failed())
	}
	res := &Measurement{baseRev: revision{Name: "main", Commit: "0123456789abcdef"}, headRev: revision{Name: "."}}
	for _, format := range []string{"text", "markdown", "json"} {
		out, code := reportOf(t, res, funcs, benches, nil, format, false)
		if code != exitFail {
			t.Errorf("%s: exit %d, want %d\n%s%s", format, code, exitFail, out, "")
		}
		a, b := strings.Index(out, "BenchmarkA"), strings.Index(out, "BenchmarkB")
		if a < 0 || b < 0 || a > b {
			t.Errorf("%s: BenchmarkA (failing) at %d, BenchmarkB at %d: want both, A first\n%s", format, a, b, out)
		}
		switch format {
		case "text":
			if !strings.Contains(out, "2 benchmarks, ") || !strings.Contains(out, "1 regressed (example.com/m BenchmarkA)") {
				t.Errorf("text: no summary over the benchmarks:\n%s", out)
			}
		case "markdown":
			if !strings.HasPrefix(out, "## ❌ hotbudget record:") || !strings.Contains(out, "No regression and no near miss in 1 benchmark: `BenchmarkB`") {
				t.Errorf("markdown: want a failing title and the quiet benchmark in a line:\n%s", out)
			}
		case "json":
			var got struct {
				Schema    string `json:"schema"`
				Functions []struct {
					Name      string `json:"name"`
					Failed    bool   `json:"failed"`
					Functions []struct {
						Name    string `json:"name"`
						Verdict string `json:"verdict"`
						Ungated bool   `json:"ungated"`
					} `json:"functions"`
				} `json:"functions"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("json: %v\n%s", err, out)
			}
			if got.Schema != "hotbudget.record/v4" || len(got.Functions) != 2 || got.Functions[0].Name != "example.com/m BenchmarkA" || !got.Functions[0].Failed {
				t.Errorf("json: schema %q, %d reports, first %q failed %v", got.Schema, len(got.Functions), got.Functions[0].Name, got.Functions[0].Failed)
			}
			for _, row := range got.Functions[0].Functions {
				if ungated := !strings.HasPrefix(row.Name, "example.com/m."); row.Ungated != ungated {
					t.Errorf("json: %s ungated %v", row.Name, row.Ungated)
				}
				if want := map[bool]string{true: "regressed", false: "unchanged"}[row.Name == "example.com/m.slow"]; row.Verdict != want {
					t.Errorf("json: %s %s, want %s", row.Name, row.Verdict, want)
				}
			}
		}
	}
}

// TestRecordReportOneVerdict checks issue 32's rule on record's reports:
// the gate's decision follows the instrument's line (which and why) at the
// head of the text report and ends it, titles the Markdown and is the
// JSON's verdict, and says what the exit code says, whether a function,
// only a benchmark result, or nothing regressed.
func TestRecordReportOneVerdict(t *testing.T) {
	funcs, _ := recordReports(t)
	passing := funcs[:1] // BenchmarkB, unchanged
	benchOut := func(ns ...int) string {
		var b strings.Builder
		b.WriteString("pkg: example.com/m\n")
		for _, n := range ns {
			fmt.Fprintf(&b, "BenchmarkA-2 \t 1000\t %d ns/op\n", n)
		}
		return b.String()
	}
	slowBench, err := bench.Compare(strings.NewReader(benchOut(100, 101, 99, 100, 102, 100)), strings.NewReader(benchOut(150, 151, 149, 152, 150, 151)))
	if err != nil {
		t.Fatal(err)
	}
	sameBench, err := bench.Compare(strings.NewReader(benchOut(100, 101, 99, 100, 102, 100)), strings.NewReader(benchOut(100, 101, 99, 100, 102, 100)))
	if err != nil {
		t.Fatal(err)
	}
	res := &Measurement{baseRev: revision{Name: "main", Commit: "0123456789abcdef"}, headRev: revision{Name: "."}, out: "perf", why: "timing: chosen by --instrument time"}
	for _, c := range []struct {
		name    string
		funcs   []*diff.Report
		benches *bench.Report
		exit    int
		reason  string
	}{
		{"a function", funcs, sameBench, exitFail, "hotbudget record: regressed (exit 1): functions' CPU time: m.slow +"},
		{"a benchmark result only", passing, slowBench, exitFail, "hotbudget record: regressed (exit 1): benchmark results: A-2 sec/op +50"},
		{"nothing", passing, sameBench, exitOK, "hotbudget record: pass (exit 0): no function, benchmark result or allocation regressed"},
	} {
		for _, format := range []string{"text", "markdown", "json"} {
			out, code := reportOf(t, res, c.funcs, c.benches, nil, format, false)
			if code != c.exit {
				t.Errorf("%s, %s: exit %d, want %d", c.name, format, code, c.exit)
			}
			switch format {
			case "text":
				lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
				if lines[0] != res.why || !strings.HasPrefix(lines[1], c.reason) || lines[len(lines)-1] != lines[1] {
					t.Errorf("%s: text's first line is not the instrument's, or its second and last lines disagree or lack %q:\n%s", c.name, c.reason, out)
				}
				if strings.Contains(out, "∞") || len(lines) > 40 {
					t.Errorf("%s: %d lines, ± ∞ %v:\n%s", c.name, len(lines), strings.Contains(out, "∞"), out)
				}
			case "markdown":
				icon := map[int]string{exitOK: "✅", exitFail: "❌"}[c.exit]
				first, _, _ := strings.Cut(out, "\n")
				if !strings.HasPrefix(first, "## "+icon+" ") || !strings.Contains(first, strings.TrimPrefix(c.reason, "hotbudget record: ")[:10]) {
					t.Errorf("%s: markdown title %q, want %s and %q", c.name, first, icon, c.reason)
				}
			case "json":
				var doc struct {
					Instrument, Why, Verdict string
					Exit                     int
				}
				if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Exit != c.exit || !strings.HasPrefix(doc.Verdict, c.reason) || doc.Instrument != "time" || doc.Why != res.why {
					t.Errorf("%s: json %s (%q) verdict %q exit %d (%v), want time, %q, %d", c.name, doc.Instrument, doc.Why, doc.Verdict, doc.Exit, err, c.reason, c.exit)
				}
			}
		}
	}
}

// A function whose time grew by less than its benchmark got faster (the
// profiles of testdata/record/uuid-moved: an allocation removed from
// uuid.Parse) is no regression: record passes and says why in every
// format, with the times by go tool pprof (8.39 -> 14.45 ns an op of
// Parse, 60.28 -> 19.60 ns an op in all).
func TestRecordReportMovedIn(t *testing.T) {
	var pr diff.Pair
	pr.Name = "github.com/google/uuid BenchmarkParseLen32Truncated"
	for side, ps := range map[string]*[]*profile.Profile{"base": &pr.Base, "head": &pr.Head} {
		for i := 1; i <= 5; i++ {
			p, err := loaders.Load(fmt.Sprintf("../../../../testdata/record/uuid-moved/%s/ParseLen32Truncated.%d.pb.gz", side, i))
			if err != nil {
				t.Fatal(err)
			}
			*ps = append(*ps, p)
		}
	}
	funcs, err := diff.CompareEach([]diff.Pair{pr}, diff.WithGate(ModulePattern([]string{"github.com/google/uuid"})))
	if err != nil {
		t.Fatal(err)
	}
	res := &Measurement{baseRev: revision{Name: "master", Commit: "7aaecea3e711"}, headRev: revision{Name: "remove", Commit: "242d21263081"}}
	want := "6.05ns more an op (+72%) while the op got 40.67ns faster (-67%): time moved into it, not failed"
	for _, format := range []string{"text", "markdown"} {
		out, code := reportOf(t, res, funcs, &bench.Report{}, nil, format, false)
		if code != exitOK || !strings.Contains(out, want) || !strings.Contains(out, "moved in") {
			t.Errorf("%s: exit %d, want %d and %q:\n%s", format, code, exitOK, want, out)
		}
	}
	out, _ := reportOf(t, res, funcs, &bench.Report{}, nil, "json", false)
	if !strings.Contains(out, `"moved_in": {`) || !strings.Contains(out, `"per": "op"`) {
		t.Errorf("json: no moved_in of Parse:\n%s", out)
	}
}
