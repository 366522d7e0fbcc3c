package diff_test

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
)

// renamed returns the profiles with function from renamed to to.
func renamed(ps []*profile.Profile, from, to string) []*profile.Profile {
	out := make([]*profile.Profile, len(ps))
	for i, p := range ps {
		c := p.Copy()
		for _, f := range c.Function {
			if f.Name == from {
				f.Name, f.SystemName = to, to
			}
		}
		out[i] = c
	}
	return out
}

// TestRename: testdata/regress's head with main.renderReport (20% more
// work) renamed main.renderTable. Unpaired, the two are gone and new,
// which fail no gate, and the report suggests the rename; paired with
// WithRename they are judged as one function with the very numbers of the
// comparison without the rename.
func TestRename(t *testing.T) {
	base := loadGlob(t, "../testdata/regress/base-*.pb.gz")
	head := loadGlob(t, "../testdata/regress/head-*.pb.gz")
	plain := rowOf(t, compare(t, base, head), "main.renderReport")
	if plain.Verdict != diff.Regressed {
		t.Fatalf("renderReport without a rename: %s", plain.Verdict)
	}
	head = renamed(head, "main.renderReport", "main.renderTable")

	r := compare(t, base, head)
	if got := verdicts(r); got["main.renderReport"] != diff.Gone || got["main.renderTable"] != diff.New || r.Failed() {
		t.Fatalf("unpaired: %v, failed %v; want gone, new and a passing gate", got, r.Failed())
	}
	// Only parseRecords and writeLog are in every run of both sides: too
	// few to measure shares against, so a new function shows its share
	// of its own profiles, counted here from the samples (a sample in
	// runtime.asyncPreempt is its caller's, as diff charges it by default).
	var fn, all int64
	for _, p := range head {
		for _, smp := range p.Sample {
			all += smp.Value[1]
			leaf := smp.Location[0].Line[0].Function.Name
			if leaf == "runtime.asyncPreempt" && len(smp.Location) > 1 {
				leaf = smp.Location[1].Line[0].Function.Name
			}
			if leaf == "main.renderTable" {
				fn += smp.Value[1]
			}
		}
	}
	if got, want := rowOf(t, r, "main.renderTable").Head.Metric, float64(fn)/float64(all); math.Abs(got-want) > 1e-9 {
		t.Errorf("new main.renderTable at %.4f%% of head, want its share %.4f%%", got*100, want*100)
	}
	hint := "main.renderReport is gone and main.renderTable is new, both in "
	if !slices.ContainsFunc(r.Warnings, func(w string) bool {
		return strings.HasPrefix(w, hint) && strings.HasSuffix(w, `diff.WithRename("main.renderReport", "main.renderTable") judges them as one function`)
	}) {
		t.Errorf("no rename suggested: %q", r.Warnings)
	}

	r = compare(t, base, head, diff.WithRename("main.renderReport", "main.renderTable"))
	row := rowOf(t, r, "main.renderTable")
	if row.Verdict != diff.Regressed || !slices.Equal(row.RenamedFrom, []string{"main.renderReport"}) || !r.Failed() {
		t.Fatalf("renamed: %s, renamed from %q, failed %v", row.Verdict, row.RenamedFrom, r.Failed())
	}
	if math.Abs(row.Relative-plain.Relative) > 1e-12 || math.Abs(row.P-plain.P) > 1e-12*plain.P {
		t.Errorf("renamed: %+.4f%% p=%g, want the unrenamed comparison's %+.4f%% p=%g", row.Relative*100, row.P, plain.Relative*100, plain.P)
	}
	for _, w := range r.Warnings {
		if strings.HasPrefix(w, hint) {
			t.Errorf("rename still suggested once done: %s", w)
		}
	}
	for _, x := range r.Rows {
		if x.Name == "main.renderReport" {
			t.Errorf("the old name still has a row: %+v", x)
		}
	}
	var text, md, js, html bytes.Buffer
	if err := r.Write(&text, "text"); err != nil || !strings.Contains(text.String(), "regressed  main.renderTable (was main.renderReport)") {
		t.Errorf("text (%v):\n%s", err, text.String())
	}
	if err := r.Write(&md, "markdown"); err != nil || !strings.Contains(md.String(), "`main.renderTable` (was `main.renderReport`)") {
		t.Errorf("markdown (%v):\n%s", err, md.String())
	}
	if err := r.Write(&js, "json"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rename    map[string]string `json:"rename"`
		Functions []struct {
			Name        string   `json:"name"`
			RenamedFrom []string `json:"renamed_from"`
		} `json:"functions"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || !slices.ContainsFunc(doc.Functions, func(f struct {
		Name        string   `json:"name"`
		RenamedFrom []string `json:"renamed_from"`
	}) bool {
		return f.Name == "main.renderTable" && slices.Equal(f.RenamedFrom, []string{"main.renderReport"})
	}) {
		t.Errorf("JSON (%v) lacks renamed_from:\n%s", err, js.String())
	}
	if doc.Rename["main.renderReport"] != "main.renderTable" || len(doc.Rename) != 1 {
		t.Errorf("JSON rename settings: %v", doc.Rename)
	}
	// The flame graph merges the two names into the new one, so that the
	// base's frames and head's share one box.
	if err := r.Write(&html, "html"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(html.String(), "main.renderReport") || !strings.Contains(html.String(), "main.renderTable") {
		t.Errorf("the HTML page still names main.renderReport, or not main.renderTable")
	}

	// A rename that matches nothing says so.
	r = compare(t, base, head, diff.WithRename("main.nowhere", "main.renderTable"))
	if !slices.Contains(r.Warnings, "rename main.nowhere → main.renderTable: no function main.nowhere in either side") {
		t.Errorf("unmatched rename: %q", r.Warnings)
	}
}

func TestWithRenameErrors(t *testing.T) {
	base := folded(t, baseFolded)
	for _, c := range []struct {
		opts []diff.Option
		want string
	}{
		{[]diff.Option{diff.WithRename("", "b")}, `diff: rename "" to "b": empty function name`},
		{[]diff.Option{diff.WithRename("a", "a")}, `diff: rename "a" to itself`},
		{[]diff.Option{diff.WithRename("a", "b"), diff.WithRename("a", "c")}, `diff: "a" is renamed twice, to "b" and to "c"`},
		{[]diff.Option{diff.WithRename("a", "b"), diff.WithRename("c", "a")}, `diff: rename "c" to "a": "a" is renamed itself`},
		{[]diff.Option{diff.WithRename("a", "b"), diff.WithRename("b", "c")}, `diff: rename "b" to "c": "b" is already the new name of "a"`},
	} {
		if _, err := diff.Compare([]*profile.Profile{base}, []*profile.Profile{base}, c.opts...); err == nil || err.Error() != c.want {
			t.Errorf("error %v, want %s", err, c.want)
		}
	}
	// Two functions merged into one, and the same rename twice, are fine.
	if _, err := diff.Compare([]*profile.Profile{base}, []*profile.Profile{base}, diff.WithRename("parse", "x"), diff.WithRename("render", "x"), diff.WithRename("parse", "x")); err != nil {
		t.Error(err)
	}
}
