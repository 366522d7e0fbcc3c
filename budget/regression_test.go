package budget

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/loaders"
)

func loadGlob(t *testing.T, pattern string) []*profile.Profile {
	t.Helper()
	files, err := filepath.Glob(testdata + pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: %v, %d files", pattern, err, len(files))
	}
	var out []*profile.Profile
	for _, f := range files {
		p, err := loaders.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestCheckRegression: five runs a side (testdata/cli/runs): parse's share
// grows from about 40% to 46%, render and gc shrink a little.
func TestCheckRegression(t *testing.T) {
	base := loadGlob(t, "cli/runs/base-*.folded")
	head := loadGlob(t, "cli/runs/head-*.folded")
	b := mustParse(t, "r.yaml", `version: 1
rules:
  - function: parse
    max_regression: 10%
  - function: render
    max_regression: 10%
  - function: parse
    max_regression: 50%
  - match: '^(parse|render)$'
    max_regression: 10%
  - function: nothere
    max_regression: 10%
`)
	res, err := Check(b, head, base)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		pass     bool
		function string
		verdict  diff.Verdict
	}{
		{false, "parse", diff.Regressed},
		{true, "render", ""},
		{true, "parse", ""},
		{false, "parse", diff.Regressed},
		{false, "", ""},
	}
	for i, w := range want {
		c := res.Checks[i]
		if c.Pass != w.pass || c.Function != w.function || (w.verdict != "" && c.Verdict != w.verdict) {
			t.Errorf("check %d (line %d): %+v, want pass=%v function=%q verdict=%q", i, c.Line, c, w.pass, w.function, w.verdict)
		}
	}
	if c := res.Checks[0]; c.Got < 0.10 || !strings.Contains(c.Message, "regressed by more than 10.00%") {
		t.Errorf("parse: got %v, message %q", c.Got, c.Message)
	}
	if c := res.Checks[4]; !c.Missing {
		t.Errorf("nothere: %+v", c)
	}
}
