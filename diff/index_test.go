package diff_test

import (
	"bytes"
	"math"
	"strconv"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/loaders"
)

// reportJSON is r's JSON report, the whole of what it says.
func reportJSON(t *testing.T, r *diff.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.Write(&b, "json"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// parseIndexes indexes the files matching pattern with loaders.LoadIndex,
// as the CLI does.
func parseIndexes(t *testing.T, pattern string) []*analysis.Index {
	t.Helper()
	var xs []*analysis.Index
	for _, f := range glob(t, pattern) {
		x, err := loaders.LoadIndex(f)
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, x)
	}
	return xs
}

// labelledRuns merges ps into one profile holding them as labelled runs,
// as hotbudget record writes a baseline.
func labelledRuns(t *testing.T, ps []*profile.Profile) *profile.Profile {
	t.Helper()
	var rec meta.Record
	cp := make([]*profile.Profile, len(ps))
	for i, p := range ps {
		q := p.Copy()
		label := strconv.Itoa(i + 1)
		for _, s := range q.Sample {
			if s.Label == nil {
				s.Label = map[string][]string{}
			}
			s.Label[meta.LabelRun] = []string{label}
		}
		cp[i] = q
		rec.Runs = append(rec.Runs, meta.Run{Label: label})
	}
	m, err := profile.Merge(cp)
	if err != nil {
		t.Fatal(err)
	}
	meta.Set(m, rec)
	return m
}

// CompareIndex on indexes parsed from the files' bytes says what Compare
// says of the profiles, for runs given one file each and for runs held in
// one labelled profile.
func TestCompareIndexEqualsCompare(t *testing.T) {
	base := loadGlob(t, "../testdata/regress/base-*.pb.gz")
	head := loadGlob(t, "../testdata/regress/head-*.pb.gz")
	for _, opts := range [][]diff.Option{nil, {diff.WithMetric(diff.Total)}, {diff.WithKey(diff.KeyNameFile), diff.WithAssumption(diff.AssumeNormal)}} {
		want := reportJSON(t, compare(t, base, head, opts...))
		r, err := diff.CompareIndex(parseIndexes(t, "../testdata/regress/base-*.pb.gz"), parseIndexes(t, "../testdata/regress/head-*.pb.gz"), opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := reportJSON(t, r); got != want {
			t.Errorf("CompareIndex and Compare disagree:\n%s\nvs\n%s", got, want)
		}

		merged := labelledRuns(t, base)
		if got := reportJSON(t, compare(t, one(merged), head, opts...)); got != want {
			t.Errorf("runs in one labelled profile and in files disagree:\n%s\nvs\n%s", got, want)
		}
		var buf bytes.Buffer
		if err := merged.Write(&buf); err != nil {
			t.Fatal(err)
		}
		mx, err := loaders.ReadIndex(&buf)
		if err != nil {
			t.Fatal(err)
		}
		r, err = diff.CompareIndex([]*analysis.Index{mx}, parseIndexes(t, "../testdata/regress/head-*.pb.gz"), opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := reportJSON(t, r); got != want {
			t.Errorf("an index of labelled runs and the files disagree:\n%s\nvs\n%s", got, want)
		}
	}
	if _, err := diff.CompareIndex([]*analysis.Index{nil}, parseIndexes(t, "../testdata/regress/head-1.pb.gz")); err == nil {
		t.Error("a nil index was accepted")
	}
}

// WithOps counts the operations of each profile: a profile holding several
// runs shares its count among them, so that five runs of n operations each
// and one profile of the same five runs with 5n operations give the same
// times per operation. (Each run divided by the whole count made the time
// per operation of a capture depend on how many runs it was split into.)
func TestWithOpsSharedAmongRuns(t *testing.T) {
	base := loadGlob(t, "../testdata/regress/base-*.pb.gz")
	head := loadGlob(t, "../testdata/regress/head-*.pb.gz")
	const n = 1000
	want := compare(t, base, head, diff.WithOps(n, n))
	got := compare(t, one(labelledRuns(t, base)), head, diff.WithOps(n*float64(len(base)), n))
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }
	if !close(got.Headline.Base, want.Headline.Base) || !close(got.Headline.Head, want.Headline.Head) {
		t.Errorf("headline per op %v -> %v, want %v -> %v", got.Headline.Base, got.Headline.Head, want.Headline.Base, want.Headline.Head)
	}
	if len(got.Rows) != len(want.Rows) {
		t.Fatalf("%d rows, want %d", len(got.Rows), len(want.Rows))
	}
	for i := range want.Rows {
		g, w := got.Rows[i], want.Rows[i]
		if g.Name != w.Name || !close(g.Base.Metric, w.Base.Metric) || g.Verdict != w.Verdict {
			t.Errorf("row %d: %s %v %s, want %s %v %s", i, g.Name, g.Base.Metric, g.Verdict, w.Name, w.Base.Metric, w.Verdict)
		}
	}
}
