package gate

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// record's exact allocation verdicts: a benchmark whose function allocates
// one more object per op fails record on its own (no CPU regression), in
// every format, naming the function; the unchanged one is summed up.
func TestRecordReportAllocations(t *testing.T) {
	funcs, benches := recordReports(t)
	var passing []*diff.Report
	for _, r := range funcs {
		if !r.Failed() {
			passing = append(passing, r)
		}
	}
	table := func(objects float64) *diff.AllocTable {
		return &diff.AllocTable{Work: 100, Funcs: map[string]*diff.AllocFunc{
			"example.com/m.parse": {Self: diff.AllocCount{Objects: objects, Bytes: 16 * objects}, Total: diff.AllocCount{Objects: objects, Bytes: 16 * objects},
				Lines: map[string]diff.AllocCount{"m.go:12": {Objects: objects, Bytes: 16 * objects}}},
		}, Judged: diff.AllocCount{Objects: objects, Bytes: 16 * objects}}
	}
	allocs := compareAllocs([]allocResult{
		{name: "example.com/m BenchmarkB", base: table(200), head: table(200)},
		{name: "example.com/m BenchmarkA", base: table(200), head: table(300)},
	})
	res := &Measurement{baseRev: revision{Name: "main", Commit: "0123456789abcdef"}, headRev: revision{Name: "."}}
	for _, format := range []string{"text", "markdown", "json"} {
		out, code := reportOf(t, res, passing, benches, allocs, format, false)
		if code != exitFail {
			t.Errorf("%s: exit %d, want %d (allocations regressed)\n%s%s", format, code, exitFail, out, "")
		}
		switch format {
		case "json":
			var got struct {
				Schema      string
				Allocations []struct {
					Name      string
					Exact     bool
					Functions []struct{ Name, Verdict string }
				}
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			if got.Schema != "hotbudget.record/v4" || len(got.Allocations) != 2 || got.Allocations[0].Name != "example.com/m BenchmarkA" ||
				!got.Allocations[0].Exact || got.Allocations[0].Functions[0].Verdict != "regressed" || got.Allocations[0].Functions[0].Name != "example.com/m.parse" {
				t.Errorf("json: %+v", got)
			}
		default:
			for _, want := range []string{"BenchmarkA", "example.com/m.parse", "+1 object, +16B", "exact"} {
				if !strings.Contains(out, want) {
					t.Errorf("%s: no %q:\n%s", format, want, out)
				}
			}
		}
	}
	// Unchanged allocations: exit 0.
	if out, code := reportOf(t, res, passing, benches, compareAllocs([]allocResult{{name: "example.com/m BenchmarkB", base: table(200), head: table(200)}}), "text", false); code != exitOK {
		t.Errorf("unchanged allocations: exit %d\n%s", code, out)
	}
}

// allocModule is a module whose benchmark parses 100 fields an op: each
// field allocates its string; at the second commit, split allocates one
// more object per field (a *field), at the third only a README changes.
var allocModule = map[string]string{
	"go.mod": "module example.com/alloc\n\ngo 1.26\n",
	"alloc.go": `// Package alloc splits records.
package alloc

import "strings"

type field struct {
	s    string
	next *field
}

var last *field

// Split returns the comma-separated fields of s.
func Split(s string) []string {
	out := make([]string, 0, 100)
	for s != "" {
		var f string
		f, s, _ = strings.Cut(s, ",")
		out = append(out, split(f))
	}
	return out
}

//go:noinline
func split(f string) string {
	b := []byte(f + "-")
	EXTRA
	return string(b[:len(b)-1])
}
`,
	"alloc_test.go": `package alloc

import (
	"strings"
	"testing"
)

var input = strings.Repeat("some-field-of-a-record,", 100)

func BenchmarkSplit(b *testing.B) {
	for b.Loop() {
		Split(input)
	}
}
`,
}

// TestRecordAllocations: record judges each benchmark's allocations per op
// exactly: a commit that adds one allocation per call of split fails
// naming split and the line that allocates, 100 objects more per op (one
// per field), and the benchmark's allocs/op regresses from one run a side;
// a commit that
// changes nothing allocates exactly as much. One record a pair: the
// verdict is exact.
func TestRecordAllocations(t *testing.T) {
	testutil.Slow(t, "builds and benchmarks two revisions twice")
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir, gitIn, write := testutil.NewGitDir(t)
	gitIn("init", "-q")
	for name, content := range allocModule {
		write(name, strings.Replace(content, "EXTRA", "", 1))
	}
	gitIn("add", "-A")
	gitIn("commit", "-q", "-m", "alloc")
	write("alloc.go", strings.Replace(allocModule["alloc.go"], "EXTRA", "last = &field{s: f}", 1))
	gitIn("commit", "-q", "-a", "-m", "one more allocation per field")
	write("README.md", "# alloc\n")
	gitIn("add", "README.md")
	gitIn("commit", "-q", "-m", "readme")

	args := []string{"--time", "--runs", "1", "--benchtime", "100ms"}
	out := filepath.Join(t.TempDir(), "perf")
	page := filepath.Join(t.TempDir(), "allocs.html")
	changed := recordIn(t, dir, append(args, "--out", out, "--allocs-html", page, "HEAD~2", "HEAD~1")...)
	if html, err := os.ReadFile(page); err != nil || !strings.Contains(string(html), "example.com/alloc.split") || !strings.Contains(string(html), `"unit":"bytes"`) {
		t.Errorf("--allocs-html: %v; want a page with split and a flame graph of bytes", err)
	}
	if changed.code != exitFail || !strings.Contains(changed.stdout, "allocations per op (exact), 1 benchmark: 1 with functions allocating more (example.com/alloc BenchmarkSplit)") ||
		!strings.Contains(changed.stdout, "regressed  example.com/alloc.split: self 100 objects, 2.34KiB -> 200 objects, 4.69KiB (+100 objects, +2.34KiB)") ||
		!regexp.MustCompile(`\n +alloc.go:27: 0 objects, 0B -> 100 objects, 2.34KiB`).MatchString(changed.stdout) || !regexp.MustCompile(`regressed +Split(-\d+)? allocs/op: \+99\.0% \(exact\)`).MatchString(changed.stdout) {
		t.Errorf("one more allocation per field: exit %d, want 1 naming split with 100 objects more per op\n%s", changed.code, changed.stdout)
	}
	// The allocation runs' estimate counts the cost of recording an
	// allocation, measured while calibrating (on the one benchmark; its
	// allocations an op as calibrated, 201-202 with go test's first op).
	if !regexp.MustCompile(`recording an allocation costs [0-9.]+[nuµm]?s \(example\.com/alloc BenchmarkSplit at base HEAD~2 \([0-9a-f]+\): [0-9.]+[nuµm]?s an op against [0-9.]+[nuµm]?s unrecorded, [0-9]+ allocations\)`).MatchString(changed.stderr) {
		t.Errorf("calibrating says nothing of what recording an allocation costs:\n%s", changed.stderr)
	}
	for _, side := range []string{"base", "head"} {
		if _, err := os.Stat(filepath.Join(out, side, "example.com", "alloc", "BenchmarkSplit.allocs.pb.gz")); err != nil {
			t.Errorf("the allocation profile of %s: %v", side, err)
		}
	}
	same := recordIn(t, dir, append(args, "--out", filepath.Join(t.TempDir(), "perf"), "HEAD~1", "HEAD")...)
	if !strings.Contains(same.stdout, "allocations per op (exact), 1 benchmark: no function allocates more") {
		t.Errorf("no code change: the allocations differ\n%s", same.stdout)
	}
}
