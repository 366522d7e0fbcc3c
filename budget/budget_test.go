package budget

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/limits"
	"github.com/hotbudget/hotbudget/loaders"
)

const testdata = "../testdata/"

func mustParse(t *testing.T, name, src string) *Budget {
	t.Helper()
	b, err := Parse(name, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoad(t *testing.T) {
	b, err := Load(testdata + "budget/busy.yaml")
	if err != nil || len(b.Rules) != 3 || b.Name != testdata+"budget/busy.yaml" {
		t.Errorf("Load: %+v, %v", b, err)
	}
	if _, err := Load(testdata + "budget/nope.yaml"); err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("missing file: %v", err)
	}
	big := t.TempDir() + "/big.yaml"
	if err := os.WriteFile(big, bytes.Repeat([]byte("#\n"), maxFileSize), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized file: %v", err)
	}
}

func TestParseSchema(t *testing.T) {
	b := mustParse(t, "b.yaml", `version: 1
defaults:
  thread: main
  process: 4242
  drop_synthetic: true
  metric: total
  mode: absolute
  assume: normal
rules:
  - function: main.f
    max_self: 20ms
    max_total: 1.5s
    max_self_share: 5%
    max_total_share: 12.5%
  - name: no regressions
    match: '^main\.'
    max_regression: 10%
    allow_missing: true
    thread: "7"
    metric: self
    assume: nothing
`)
	if b.Version != 1 || len(b.Rules) != 2 {
		t.Fatalf("got %+v", b)
	}
	r0, r1 := b.Rules[0], b.Rules[1]
	want0 := []Limit{
		{Bound: limits.Limit{Quantity: limits.SelfTime, Time: 20 * time.Millisecond}, Line: 11},
		{Bound: limits.Limit{Quantity: limits.TotalTime, Time: 1500 * time.Millisecond}, Line: 12},
		{Bound: limits.Limit{Quantity: limits.SelfShare, Share: 0.05}, Line: 13},
		{Bound: limits.Limit{Quantity: limits.TotalShare, Share: 0.125}, Line: 14},
	}
	if !reflect.DeepEqual(r0.Limits, want0) {
		t.Errorf("limits %+v, want %+v", r0.Limits, want0)
	}
	if r0.Line != 10 || r0.Function != "main.f" || !reflect.DeepEqual(r0.Selection, analysis.Selection{Threads: []string{"main"}, Processes: []string{"4242"}, DropSynthetic: true}) || r0.Metric != "total" || r0.Mode != "absolute" || r0.Assume != diff.AssumeNormal {
		t.Errorf("rule 1 with defaults: %+v", r0)
	}
	if r1.Match == nil || r1.Match.String() != `^main\.` || r1.selector() != `/^main\./` || r1.Name != "no regressions" ||
		!r1.AllowMissing || !reflect.DeepEqual(r1.Selection, analysis.Selection{Threads: []string{"7"}, Processes: []string{"4242"}, DropSynthetic: true}) || r1.Metric != "self" || r1.Mode != "absolute" || r1.Assume != diff.AssumeNothing {
		t.Errorf("rule 2: %+v", r1)
	}
	if len(r1.Limits) != 1 || r1.Limits[0].Bound.Quantity != "" || r1.Limits[0].Regression != 0.10 {
		t.Errorf("rule 2 limits: %+v", r1.Limits)
	}
}

// TestParseJSONSameAsYAML reads the same budget in both syntaxes.
func TestParseJSONSameAsYAML(t *testing.T) {
	y := load(t, "budget/busy.yaml")
	j := load(t, "budget/busy.json")
	for i := range y.Rules {
		y.Rules[i].Line, j.Rules[i].Line = 0, 0
		for k := range y.Rules[i].Limits {
			y.Rules[i].Limits[k].Line, j.Rules[i].Limits[k].Line = 0, 0
		}
	}
	y.Name, j.Name = "", ""
	if !reflect.DeepEqual(y, j) {
		t.Errorf("YAML and JSON differ:\n%+v\n%+v", y, j)
	}
}

func load(t *testing.T, path string) *Budget {
	t.Helper()
	data, err := os.ReadFile(testdata + path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseErrors pins that every error names the file and the line.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      []string // each must appear in the error
	}{
		{"empty", "", []string{"b: empty budget file"}},
		{"comments only", "# nothing\n", []string{"b:1: empty budget file"}},
		{"bad yaml", "version: 1\nrules:\n  - function: [\n", []string{"b:3: invalid YAML"}},
		{"tab indentation", "version: 1\nrules:\n\t- function: f\n", []string{"b:3: invalid YAML"}},
		{"not a mapping", "- 1\n", []string{"b:1: budget must be a mapping"}},
		{"no version", "rules:\n  - function: f\n    max_self: 1ms\n", []string{"b:1: missing version"}},
		{"version 2", "version: 2\nrules:\n  - function: f\n    max_self: 1ms\n", []string{"b:1: version must be 1"}},
		{"no rules", "version: 1\n", []string{"b:1: missing rules"}},
		{"empty rules", "version: 1\nrules: []\n", []string{"b:2: rules is empty"}},
		{"unknown top key", "version: 1\nrule:\n  - function: f\n", []string{`b:2: budget: unknown key "rule"`}},
		{"unknown rule key", "version: 1\nrules:\n  - function: f\n    max_slef: 1ms\n", []string{`b:4: rule 1: unknown key "max_slef"`}},
		{"duplicate key", "version: 1\nrules:\n  - function: f\n    max_self: 1ms\n    max_self: 2ms\n", []string{`b:5: rule 1: duplicate key "max_self"`}},
		{"bare number duration", "version: 1\nrules:\n  - function: f\n    max_self: 20\n", []string{"b:4: max_self: 20 has no unit: write a duration such as 20ms"}},
		{"bad duration", "version: 1\nrules:\n  - function: f\n    max_total: 20 ms\n", []string{`b:4: max_total: "20 ms" is not a duration`}},
		{"negative duration", "version: 1\nrules:\n  - function: f\n    max_total: -1ms\n", []string{`b:4: max_total: "-1ms" is negative`}},
		{"fraction share", "version: 1\nrules:\n  - function: f\n    max_self_share: 0.05\n", []string{"b:4: max_self_share: 0.05 has no unit: write a percentage such as 0.05%"}},
		{"percent without sign", "version: 1\nrules:\n  - function: f\n    max_self_share: 5 percent\n", []string{"b:4: max_self_share must be a percentage such as 5%"}},
		{"share over 100", "version: 1\nrules:\n  - function: f\n    max_total_share: 150%\n", []string{`b:4: max_total_share: "150%" is more than 100%`}},
		{"both selectors", "version: 1\nrules:\n  - function: f\n    match: g\n    max_self: 1ms\n", []string{"b:4: rule 1: give function or match, not both"}},
		{"no selector", "version: 1\nrules:\n  - max_self: 1ms\n", []string{"b:3: rule 1: needs function (an exact name) or match"}},
		{"no limit", "version: 1\nrules:\n  - function: f\n", []string{"b:3: rule 1: no limit"}},
		{"bad regexp", "version: 1\nrules:\n  - match: '('\n    max_self: 1ms\n", []string{"b:3: match: error parsing regexp"}},
		{"bad metric", "version: 1\ndefaults:\n  metric: cum\nrules:\n  - function: f\n    max_self: 1ms\n", []string{`b:3: metric must be self or total, got "cum"`}},
		{"bad assumption", "version: 1\nrules:\n  - function: f\n    max_regression: 5%\n    assume: lognormal\n", []string{`b:5: assume must be nothing or normal, got "lognormal"`}},
		{"bool as string", "version: 1\nrules:\n  - function: f\n    max_self: 1ms\n    allow_missing: yes\n", []string{`b:5: allow_missing must be true or false, got "yes"`}},
		{"alias", "version: 1\nx: &a 1\nrules:\n  - function: f\n    max_self: *a\n", []string{`b:2: budget: unknown key "x"`, "b:5: max_self: YAML aliases"}},
		{"two documents", "version: 1\n---\nversion: 1\n", []string{"b:2: a budget file holds one YAML document"}},
		{"several errors at once", "version: 1\nrules:\n  - function: f\n    max_self: 20\n  - match: g\n    max_self_shares: 5%\n",
			[]string{"b:4: max_self: 20 has no unit", `b:6: rule 2: unknown key "max_self_shares"`}},
		{"json syntax", "{\n  \"version\": 1,\n  \"rules\": [\n    {\"function\": \"f\",}\n  ]\n}\n", []string{"b:4: invalid JSON"}},
		{"json bare number", "{\n  \"version\": 1,\n  \"rules\": [\n    {\"function\": \"f\",\n     \"max_self\": 20}\n  ]\n}\n", []string{"b:5: max_self: 20 has no unit"}},
		{"json unknown key", "{\"version\": 1,\n\"rules\": [{\"function\": \"f\", \"max_self\": \"1ms\",\n\n \"oops\": true}]}", []string{`b:4: rule 1: unknown key "oops"`}},
		{"json trailing data", "{\"version\": 1, \"rules\": [{\"function\": \"f\", \"max_self\": \"1ms\"}]}\n{}", []string{"b:2: invalid JSON: more than one value"}},
		{"json too deep", strings.Repeat("{\"a\":", 20) + "1" + strings.Repeat("}", 20), []string{"b:1: JSON nested deeper than 16 levels"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("b", []byte(c.src))
			if err == nil {
				t.Fatalf("no error for %q", c.src)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func busy(t *testing.T) *profile.Profile {
	t.Helper()
	p, err := loaders.Load(testdata + "pprof/busy.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckBusy checks the hand-worked numbers of testdata/pprof/busy.pb.gz
// (as go tool pprof -top prints them) against budget limits.
func TestCheckBusy(t *testing.T) {
	p := busy(t)
	res, err := Check(load(t, "budget/busy-fail.yaml"), []*profile.Profile{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		line     int
		check    string
		pass     bool
		function string
		got      float64
	}
	want := []row{
		{7, "max_self", false, "main.parseRecords", 150e6},
		{8, "max_total_share", true, "main.parseRecords", 990.0 / 1480},
		{10, "max_self", false, "crypto/internal/fips140/sha256.blockSHANI", 1050e6},
		{12, "max_self", false, "", 0},
	}
	if len(res.Checks) != len(want) {
		t.Fatalf("%d checks, want %d: %+v", len(res.Checks), len(want), res.Checks)
	}
	for i, w := range want {
		c := res.Checks[i]
		if c.Line != w.line || c.Check != w.check || c.Pass != w.pass || c.Function != w.function || abs(c.Got-w.got) > 1e-9*max(1, w.got) {
			t.Errorf("check %d: got %+v\nwant %+v", i, c, w)
		}
	}
	if m := res.Checks[0].Message; m != "main.parseRecords self time 150ms (10.14% of 1.48s total, 15 samples), want at most 100ms" {
		t.Errorf("message %q", m)
	}
	if m := res.Checks[3].Message; !strings.Contains(m, `no function named "main.parseRecord" among 26 functions (1.48s total, 148 samples; without synthetic frames); did you mean main.parseRecords?`) {
		t.Errorf("missing-function message %q", m)
	}
	if !res.Checks[3].Missing || res.Passed() || len(res.Failures()) != 3 {
		t.Errorf("missing %v, passed %v, failures %d", res.Checks[3].Missing, res.Passed(), len(res.Failures()))
	}
	if c := res.Checks[2]; c.Matched != 10 || !strings.Contains(c.Message, `crypto/internal/fips140/sha256.blockSHANI (worst of 10 functions matching regexp "^crypto/") self time 1.05s`) || !strings.HasSuffix(c.File, "sha256block_amd64.s") {
		t.Errorf("pattern rule: %+v", c)
	}

	res, err = Check(load(t, "budget/busy.yaml"), []*profile.Profile{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed() || len(res.Checks) != 4 {
		t.Errorf("busy.yaml should pass with 4 checks: %+v", res.Checks)
	}
}

func abs(f float64) float64 { return max(f, -f) }

// TestCheckRunsAreAveraged: a time limit applies to the mean over runs; a
// run without the function counts as zero.
func TestCheckRunsAreAveraged(t *testing.T) {
	p := busy(t)
	empty := p.Copy()
	empty.Sample = nil
	b := mustParse(t, "b", "version: 1\nrules:\n  - function: main.parseRecords\n    max_self: 100ms\n")
	res, err := Check(b, []*profile.Profile{p, empty}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Checks[0]; c.Got != 75e6 || !c.Pass || !strings.Contains(c.Message, "self time 75ms (mean of 2 profiles: 10.14% of 740ms total, 15 samples in all)") {
		t.Errorf("got %+v, want 75ms (150ms and 0) passing", c)
	}
	if len(p.Sample) == 0 {
		t.Error("Check modified the caller's profile")
	}
}

func TestCheckAllowMissingAndSelection(t *testing.T) {
	p := busy(t)
	b := mustParse(t, "b", `version: 1
rules:
  - function: main.gone
    max_self: 1ms
    allow_missing: true
`)
	res, err := Check(b, []*profile.Profile{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Checks[0]; !c.Pass || !c.Missing || !strings.Contains(c.Message, "allowed by AllowMissing") {
		t.Errorf("allow_missing: %+v", c)
	}
	// A thread with no samples must not pass vacuously, nor fail as if
	// measured: the check cannot be made (analysis.CheckTime's rule).
	b = mustParse(t, "b", `version: 1
rules:
  - function: main.parseRecords
    thread: no-such-thread
    max_self: 1ms
    allow_missing: true
`)
	_, err = Check(b, []*profile.Profile{p}, nil)
	if !errors.Is(err, analysis.ErrNoTime) || !strings.Contains(err.Error(), `b:5: perfassert: the selection (thread "no-such-thread") leaves no time`) {
		t.Errorf("a thread with no samples: %v", err)
	}
}

func TestCheckErrors(t *testing.T) {
	p := busy(t)
	b := mustParse(t, "b.yaml", "version: 1\nrules:\n  - function: f\n    max_regression: 5%\n")
	if _, err := Check(b, []*profile.Profile{p}, nil); err == nil || !strings.Contains(err.Error(), "b.yaml:4: max_regression needs baseline profiles") {
		t.Errorf("got %v", err)
	}
	if _, err := Check(b, nil, nil); err == nil {
		t.Error("no error without profiles")
	}
}

func TestWriters(t *testing.T) {
	res, err := Check(load(t, "budget/busy-fail.yaml"), []*profile.Profile{busy(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var text, md, js bytes.Buffer
	if err := res.writeText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "FAIL  budget/busy-fail.yaml:7   max_self") ||
		!strings.HasSuffix(text.String(), "budget budget/busy-fail.yaml: 3 of 4 checks failed (1 profile)\n") {
		t.Errorf("text:\n%s", text.String())
	}
	if err := res.writeMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| :x: | main.parseRecords (line 7) | max_self | `main.parseRecords` | 150ms | 100ms |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	if err := res.writeJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Passed bool `json:"passed"`
		Checks []struct {
			Line     int     `json:"line"`
			Check    string  `json:"check"`
			Pass     bool    `json:"pass"`
			Function string  `json:"function"`
			Unit     string  `json:"unit"`
			Got      float64 `json:"got"`
			Limit    float64 `json:"limit"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Passed || len(back.Checks) != 4 || back.Checks[0].Check != "max_self" || back.Checks[0].Unit != "ns" ||
		back.Checks[0].Got != 150e6 || back.Checks[0].Limit != 100e6 || back.Checks[0].Line != 7 {
		t.Errorf("json: %+v", back)
	}
}

func FuzzParse(f *testing.F) {
	for _, p := range []string{"budget/busy.yaml", "budget/busy.json", "budget/busy-fail.yaml", "budget/malformed.yaml"} {
		data, err := os.ReadFile(testdata + p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Parse("fuzz", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		if len(b.Rules) == 0 {
			t.Error("a budget without rules parsed")
		}
		for _, r := range b.Rules {
			if (r.Function == "") == (r.Match == nil) || len(r.Limits) == 0 || r.Line == 0 {
				t.Errorf("invalid rule parsed: %+v", r)
			}
		}
	})
}

// TestDocExampleParses keeps the schema in the package documentation valid.
func TestDocExampleParses(t *testing.T) {
	src, err := os.ReadFile("budget.go")
	if err != nil {
		t.Fatal(err)
	}
	var yamlDoc []string
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "//\tversion: 1") {
			in = true
		}
		if in {
			if !strings.HasPrefix(line, "//\t") {
				break
			}
			yamlDoc = append(yamlDoc, strings.TrimPrefix(line, "//\t"))
		}
	}
	if len(yamlDoc) < 10 {
		t.Fatalf("schema example not found in the package doc (%d lines)", len(yamlDoc))
	}
	b, err := Parse("doc", []byte(strings.Join(yamlDoc, "\n")))
	if err != nil {
		t.Fatalf("the package doc's example does not parse: %v", err)
	}
	if len(b.Rules) != 6 || len(b.Rules[4].Limits) != 4 || len(b.Rules[5].Limits) != 2 ||
		b.Rules[5].Limits[0] != (Limit{Bound: limits.Limit{Quantity: limits.SelfInstructions, Count: 2000000}, PerIteration: true, Line: b.Rules[5].Limits[0].Line}) || b.Rules[4].Limits[3] != (Limit{Bound: limits.Limit{Quantity: limits.TotalAllocBytes, Count: 1.5 * (1 << 20)}, Line: b.Rules[4].Limits[3].Line}) ||
		b.Rules[3].Selection.Threads[0] != "worker" || b.Rules[0].Selection.Threads[0] != "main" || !b.Rules[3].AllowMissing ||
		b.Rules[2].Limits[0] != (Limit{Bound: limits.Limit{Quantity: limits.SelfTime, Time: 20e3}, PerIteration: true, Line: b.Rules[2].Limits[0].Line}) {
		t.Errorf("doc example parsed as %+v", b.Rules)
	}
}

// TestCheckAssume: max_regression with assume: normal judges the five-run
// fixtures with Welch's t-test: the same verdicts here, a different q.
func TestCheckAssume(t *testing.T) {
	base, head := loadGlob(t, "cli/runs/base-*.folded"), loadGlob(t, "cli/runs/head-*.folded")
	q := map[diff.Assumption]float64{}
	for _, a := range []diff.Assumption{diff.AssumeNothing, diff.AssumeNormal} {
		b := mustParse(t, "b", "version: 1\ndefaults:\n  assume: "+string(a)+"\nrules:\n  - function: parse\n    max_regression: 10%\n")
		res, err := Check(b, head, base)
		if err != nil {
			t.Fatal(err)
		}
		c := res.Checks[0]
		if c.Pass || c.Verdict != diff.Regressed {
			t.Errorf("assume %s: %+v, want parse regressed", a, c)
		}
		q[a] = c.Q
	}
	if q[diff.AssumeNothing] == q[diff.AssumeNormal] {
		t.Errorf("q %v under both assumptions: the test was not switched", q[diff.AssumeNothing])
	}
}
