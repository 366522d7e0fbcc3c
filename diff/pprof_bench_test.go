package diff_test

import (
	"fmt"
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
