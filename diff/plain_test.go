package diff_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/diff"
)

// reachable walks every type a value of t can reach (struct fields,
// pointers, slices, arrays, maps), unexported fields included, and
// returns the problems plainReport forbids: a function, channel, unsafe
// pointer or interface (what it holds is unknown), or one of the
// engine's types: the comparison under way, its runs and sides, an
// analysis.Index or Table, a pprof profile. A compiled regexp
// (Settings.Only, Gate, the selection's patterns) is immutable and
// allowed.
func reachable(t reflect.Type, path string, seen map[reflect.Type]bool, bad *[]string) {
	if seen[t] {
		return
	}
	seen[t] = true
	if t == reflect.TypeFor[regexp.Regexp]() {
		return
	}
	forbidden := map[string][]string{
		"github.com/hotbudget/hotbudget/diff":     {"engine", "comparison", "function", "run", "runFunc", "side", "inputs", "runStacks", "judging"},
		"github.com/hotbudget/hotbudget/analysis": {"Index", "Table"},
	}
	if slices.Contains(forbidden[t.PkgPath()], t.Name()) || strings.HasPrefix(t.PkgPath(), "github.com/google/pprof") ||
		strings.HasPrefix(t.PkgPath(), "github.com/hotbudget/hotbudget/internal/index") {
		*bad = append(*bad, path+": "+t.String())
		return
	}
	switch t.Kind() {
	case reflect.Func, reflect.Chan, reflect.UnsafePointer, reflect.Interface:
		*bad = append(*bad, path+": "+t.String())
	case reflect.Pointer, reflect.Slice, reflect.Array:
		reachable(t.Elem(), path+"[]", seen, bad)
	case reflect.Map:
		reachable(t.Key(), path+"{key}", seen, bad)
		reachable(t.Elem(), path+"{}", seen, bad)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			reachable(f.Type, path+"."+f.Name, seen, bad)
		}
	}
}

// TestReportIsPlainData: a Report holds no engine, run, index or profile,
// nor anything that could reach one: every type it can reach is data. A
// report is then complete when Compare returns: a copy of it writes the
// same text, Markdown, JSON and HTML (flame graph included) as the
// original, and what it exports survives a JSON round trip unchanged.
func TestReportIsPlainData(t *testing.T) {
	var bad []string
	reachable(reflect.TypeFor[diff.Report](), "Report", map[reflect.Type]bool{}, &bad)
	if len(bad) > 0 {
		t.Errorf("a Report reaches types that are not plain data:\n%s", strings.Join(bad, "\n"))
	}
	// The check catches what it must: the engine's own types.
	var caught []string
	reachable(reflect.TypeFor[struct {
		X *struct{ F func() }
		Y map[string]any
	}](), "probe", map[reflect.Type]bool{}, &caught)
	if len(caught) != 2 {
		t.Errorf("the walk found %v in a probe holding a func and an interface, want both", caught)
	}

	r := compare(t, loadGlob(t, "../testdata/regress/base-*.pb.gz"), loadGlob(t, "../testdata/regress/head-*.pb.gz"))
	if len(r.Regressions()) == 0 || r.Regressions()[0].Explain == nil {
		t.Fatal("want an explained regression to write")
	}
	write := func(r *diff.Report) map[string]string {
		out := map[string]string{}
		for name, w := range map[string]func(*bytes.Buffer) error{
			"text": func(b *bytes.Buffer) error { return r.Write(b, "text") }, "markdown": func(b *bytes.Buffer) error { return r.Write(b, "markdown") },
			"json": func(b *bytes.Buffer) error { return r.Write(b, "json") }, "html": func(b *bytes.Buffer) error { return r.Write(b, "html") },
		} {
			var b bytes.Buffer
			if err := w(&b); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out[name] = b.String()
		}
		return out
	}
	want := write(r)
	cp := *r
	cp.Rows = slices.Clone(r.Rows)
	cp.Warnings = slices.Clone(r.Warnings)
	*r = diff.Report{} // the original gone: the copy alone writes
	got := write(&cp)
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("%s written from a copy of the report differs from the original's", k)
		}
	}
	if !strings.Contains(got["html"], `id="hb-canvas"`) {
		t.Error("the copy's HTML report has no flame graph")
	}

	exported, err := json.Marshal(&cp)
	if err != nil {
		t.Fatal(err)
	}
	var back diff.Report
	if err := json.Unmarshal(exported, &back); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(&back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(exported, again) {
		t.Error("the report's exported fields change in a JSON round trip")
	}
	if back.Rows[0].Explain == nil || !reflect.DeepEqual(back.Rows[0].Explain, cp.Rows[0].Explain) || back.Headline.Verdict != cp.Headline.Verdict {
		t.Error("the round trip lost the explanation or the headline")
	}
}
