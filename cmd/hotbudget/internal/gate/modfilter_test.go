package gate

import (
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// judgeRecordOut judges res as record does after its runs, with args (an
// instrument's flag, --no-allocs, BASE HEAD), and returns its stdout, its
// error's text and its exit code.
func judgeRecordOut(t *testing.T, res *Measurement, args ...string) (string, string, int) {
	t.Helper()
	res.cfg, _ = configOf(t, args)
	return judged(t, res, "text", false)
}

// TestRecordNothingJudged: record (and merge, which judges through the
// same code) with counts or times of which the module gated judges no
// function exits 2, naming the module and the closest names; with the
// names the toolchain writes for gopkg.in/yaml.v3 it judges them and
// names the function that regressed.
func TestRecordNothingJudged(t *testing.T) {
	scan := "gopkg.in/yaml%2ev3.yaml_parser_scan_to_next_token"
	exact := func(mods []string) *Measurement {
		base := countsDiff(100, map[string]int64{scan: 2_400_000, "gopkg.in/yaml%2ev3.read": 3_000_000, "runtime.mallocgc": 94_600_000})
		head := countsDiff(100, map[string]int64{scan: 2_465_000, "gopkg.in/yaml%2ev3.read": 3_000_000, "runtime.mallocgc": 94_600_000})
		rep, err := diff.CompareCounts(base, head, ModulePattern(mods).MatchString)
		if err != nil {
			t.Fatal(err)
		}
		return &Measurement{modules: mods, baseRev: revision{Name: "main", Commit: "0123456789abcdef"}, headRev: revision{Name: "HEAD", Commit: "fedcba9876543210"},
			exact: []exactResult{{name: "gopkg.in/yaml.v3 BenchmarkUnmarshal", ops: 100, base: base, head: head, report: rep}}}
	}
	out, errOut, code := judgeRecordOut(t, exact([]string{"gopkg.in/yaml.v3"}), "--instructions", "main", "HEAD")
	if code != exitFail || !strings.Contains(out, "yaml_parser_scan_to_next_token") {
		t.Errorf("--instructions, gopkg.in/yaml.v3: exit %d, want %d naming %s\n%s%s", code, exitFail, scan, out, errOut)
	}
	out, errOut, code = judgeRecordOut(t, exact([]string{"gopkg.in/yaml.v2"}), "--instructions", "main", "HEAD")
	want := "the functions of gopkg.in/yaml.v2 (the module gated by default; --gate . gates every function) matched none of the 3 functions measured, so nothing was judged; closest names: gopkg.in/yaml%2ev3."
	if code != exitUsage || !strings.Contains(errOut, want) {
		t.Errorf("--instructions, gopkg.in/yaml.v2: exit %d, want %d saying %q\n%s%s", code, exitUsage, want, out, errOut)
	}

	// Unchanged counts pass, saying how many functions were judged.
	same := exact([]string{"gopkg.in/yaml.v3"})
	same.exact[0].head = same.exact[0].base
	rep, err := diff.CompareCounts(same.exact[0].base, same.exact[0].head, ModulePattern(same.modules).MatchString)
	if err != nil {
		t.Fatal(err)
	}
	same.exact[0].report = rep
	out, errOut, code = judgeRecordOut(t, same, "--instructions", "main", "HEAD")
	if want := "no function executes more instructions in 1 benchmark (exact counts, callgrind; 2 functions judged)"; code != exitOK || !strings.HasPrefix(out, "counting instructions (callgrind): chosen by --instructions\n"+want) {
		t.Errorf("--instructions, unchanged: exit %d, want %d saying %q\n%s%s", code, exitOK, want, out, errOut)
	}

	// Sampled time: the same, through diff.CompareEach's gate.
	timed := func(mods []string) *Measurement {
		pr := diff.Pair{Name: "gopkg.in/yaml.v3 BenchmarkUnmarshal"}
		for r := range 5 {
			for _, side := range []string{"base", "head"} {
				var samples []testutil.Sample
				for f, name := range []string{scan, "gopkg.in/yaml%2ev3.read", "runtime.mallocgc"} {
					n := int64(1000+300*f+7*r) * 10_000_000
					if side == "head" && f == 0 {
						n += n / 2
					}
					samples = append(samples, testutil.Sample{Stack: []string{"gopkg.in/yaml%2ev3_test.BenchmarkUnmarshal", name}, Nanos: n})
				}
				if side == "base" {
					pr.Base = append(pr.Base, testutil.TimeProfile(samples...))
				} else {
					pr.Head = append(pr.Head, testutil.TimeProfile(samples...))
				}
			}
		}
		benchOut := []byte("pkg: gopkg.in/yaml.v3\n" + strings.Repeat("BenchmarkUnmarshal-2   \t     100\t     10000 ns/op\n", 5))
		return &Measurement{modules: mods, pairs: []diff.Pair{pr}, baseBench: benchOut, headBench: benchOut, baseRev: revision{Name: "main", Commit: "0123456789abcdef"}, headRev: revision{Name: "HEAD", Commit: "fedcba9876543210"}}
	}
	out, errOut, code = judgeRecordOut(t, timed([]string{"gopkg.in/yaml.v3"}), "--time", "--no-allocs", "main", "HEAD")
	if code != exitFail || !strings.Contains(out, "yaml_parser_scan_to_next_token") || !strings.Contains(out, "1 benchmarks, 4 function rows (2 judged): 1 regressed") {
		t.Errorf("time, gopkg.in/yaml.v3: exit %d, want %d naming %s\n%s%s", code, exitFail, scan, out, errOut)
	}
	out, errOut, code = judgeRecordOut(t, timed([]string{"gopkg.in/yaml.v2"}), "--time", "--no-allocs", "main", "HEAD")
	want = "the functions of gopkg.in/yaml.v2 (the module gated by default; --gate . gates every function) matched none of the 4 functions measured, so nothing was judged; closest names: gopkg.in/yaml%2ev3."
	if code != exitUsage || !strings.Contains(errOut, want) {
		t.Errorf("time, gopkg.in/yaml.v2: exit %d, want %d saying %q\n%s%s", code, exitUsage, want, out, errOut)
	}
}
