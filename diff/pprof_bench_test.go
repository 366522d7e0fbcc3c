package diff_test

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// ToPprof's profile, shown by go tool pprof -top, equals what pprof itself
// prints for -diff_base with the same two files.
func TestToPprofMatchesDiffBase(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	dir := t.TempDir()
	base := loadGlob(t, "../testdata/regress/base-1.pb.gz")[0]
	head := loadGlob(t, "../testdata/regress/head-1.pb.gz")[0]
	d, err := diff.ToPprof(base, head)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "diff.pb.gz")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	top := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", append([]string{"tool", "pprof", "-top", "-nodecount=1000", "-nodefraction=0", "-unit=ms"}, args...)...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof %v: %v\n%s", args, err, b)
		}
		// Keep the table: header lines name the files and differ.
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if strings.Contains(l, "flat%") {
				return strings.Join(lines[i:], "\n")
			}
		}
		t.Fatalf("no table in pprof output:\n%s", b)
		return ""
	}
	got := top(out)
	want := top("-diff_base", "../testdata/regress/base-1.pb.gz", "../testdata/regress/head-1.pb.gz")
	if got != want {
		t.Errorf("pprof -top of ToPprof:\n%s\nwant (pprof -diff_base):\n%s", got, want)
	}
	if !strings.Contains(got, "main.renderReport") {
		t.Errorf("diff lacks main.renderReport:\n%s", got)
	}
	// The inputs are untouched.
	for _, s := range base.Sample {
		if s.Value[0] < 0 || s.Label[diff.BaseLabel] != nil {
			t.Fatal("ToPprof modified the base profile")
		}
	}
}

func TestCompareBench(t *testing.T) {
	old, err := os.Open("../testdata/cli/old.bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	cur, err := os.Open("../testdata/cli/new.bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	r, err := diff.CompareBench(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]diff.Verdict{}
	for _, row := range r.Rows {
		got[row.Name+" "+row.Unit] = row.Verdict
		if exact := row.Unit == "B/op" || row.Unit == "allocs/op"; exact != (row.Test == "exact") || !exact && row.Test != "mann-whitney" && row.Verdict != diff.New && row.Verdict != diff.Gone {
			t.Errorf("%s: test %s", row.Name, row.Test)
		}
	}
	if got["Parse-2 sec/op"] != diff.Regressed {
		t.Errorf("Parse 1000 -> 1300 ns/op: %v", got)
	}
	if got["Render-2 sec/op"] != diff.Unchanged {
		t.Errorf("Render unchanged: %v", got)
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "regressed") || !strings.Contains(b.String(), "Parse-2") {
		t.Errorf("text report:\n%s", b.String())
	}
	if _, err := diff.CompareBench(strings.NewReader("not a benchmark\n"), strings.NewReader("")); err == nil {
		t.Error("input without results: no error")
	}

	// Assuming normal runs: Welch's t-test, the same verdicts here, and
	// the report says which test it used.
	old.Seek(0, io.SeekStart)
	cur.Seek(0, io.SeekStart)
	r, err = diff.CompareBench(old, cur, diff.WithAssumption(diff.AssumeNormal))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range r.Rows {
		if row.Test != "welch-t" && row.Test != "exact" {
			t.Errorf("AssumeNormal: %s %s: test %s", row.Name, row.Unit, row.Test)
		}
		if want := got[row.Name+" "+row.Unit]; row.Verdict != want {
			t.Errorf("AssumeNormal: %s %s: %s, want %s as with Mann-Whitney", row.Name, row.Unit, row.Verdict, want)
		}
	}
	b.Reset()
	if err := r.WriteText(&b); err != nil || !strings.Contains(b.String(), "Welch's t-test") {
		t.Errorf("AssumeNormal text report (%v):\n%s", err, b.String())
	}
}

// Throughput: higher is better, so a drop is the regression.
func TestCompareBenchThroughput(t *testing.T) {
	runs := func(v float64) string {
		var b strings.Builder
		for i := 0; i < 6; i++ {
			fmt.Fprintf(&b, "BenchmarkCopy-2 100 1000 ns/op %.1f MB/s\n", v+float64(i))
		}
		return b.String()
	}
	r, err := diff.CompareBench(strings.NewReader(runs(500)), strings.NewReader(runs(300)))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range r.Rows {
		if row.Unit == "B/s" && row.Verdict != diff.Regressed {
			t.Errorf("throughput 500 -> 300 MB/s: %s", row.Verdict)
		}
	}
}

// synthetic builds a profile of n functions, each a leaf under main with
// weights from f.
func synthetic(b testing.TB, n int, f func(i int) int64) *profile.Profile {
	frames := make([]pbuild.Frame, n)
	counts := make([]int64, n)
	for i := range n {
		frames[i] = pbuild.Frame{Name: fmt.Sprintf("pkg%d.F%d", i%100, i), File: fmt.Sprintf("/src/pkg%d/f.go", i%100), Line: int64(i)}
		counts[i] = f(i)
	}
	return leaves(b, "synthetic", "main.go", frames, counts)
}

// BenchmarkCompare50k diffs two profiles of 50,000 functions each.
func BenchmarkCompare50k(b *testing.B) {
	base := synthetic(b, 50000, func(i int) int64 { return 1 + int64(i%97) })
	head := synthetic(b, 50000, func(i int) int64 { return 1 + int64((i*7)%97) })
	b.ResetTimer()
	stop := cpuTimer(b)
	for b.Loop() {
		r, err := diff.Compare([]*profile.Profile{base}, []*profile.Profile{head})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Rows) < 50000 || math.IsNaN(r.Rows[0].Scale) {
			b.Fatal("rows missing")
		}
	}
	stop()
}
