package gate

import (
	"bytes"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/internal/valgrind"
	"github.com/hotbudget/hotbudget/loaders"
)

// layoutModule sums the key of 1<<15 records of 16 bytes; layoutGrown is
// the same code with the record grown to 64 bytes by fields the loop never
// reads: the same instructions, four times the cache lines.
var layoutModule = map[string]string{
	"go.mod": "module example.com/lay\n\ngo 1.26\n",
	"lay.go": `// Package lay sums records.
package lay

type record struct {
	key, val int64
}

var records = make([]record, 1<<15)

//go:noinline
func sum(rs []record) int64 {
	var s int64
	for i := range rs {
		s += rs[i].key
	}
	return s
}
`,
	"lay_test.go": `package lay

import "testing"

var sink int64

func BenchmarkSum(b *testing.B) {
	for b.Loop() {
		sink = sum(records)
	}
}
`,
}

const layoutGrown = "key, val int64\n\tpad      [6]int64"

// TestRecordCycles records a module whose hot record grows with --cycles,
// which names the loop regressed as memory (exit 1), and with
// --instructions, which cannot see it (exit 0); an unchanged pair passes
// --cycles. It logs what each record took, --cycles against
// --instructions.
func TestRecordCycles(t *testing.T) {
	testutil.Slow(t, "builds two revisions three times and counts a benchmark under valgrind twelve times")
	dir, gitIn, write := moduleRepo(t, layoutModule, "git", "valgrind")
	write("README.md", "# lay\n")
	gitIn("add", "README.md")
	gitIn("commit", "-q", "-m", "readme")
	write("lay.go", strings.Replace(layoutModule["lay.go"], "key, val int64", layoutGrown, 1))
	gitIn("commit", "-q", "-a", "-m", "a wider record")

	start := time.Now()
	same := recordIn(t, dir, "--cycles", "HEAD~2", "HEAD~1")
	tookCycles := time.Since(start)
	if same.code != 0 {
		t.Errorf("README commit under --cycles: exit %d\n%s", same.code, same.stdout)
	}
	out := t.TempDir()
	grown := recordIn(t, dir, "--cycles", "--out", out, "HEAD~1", "HEAD")
	if grown.code != 1 || strings.Count(grown.stdout, "  regressed ") != 2 ||
		!regexp.MustCompile(`regressed example.com/lay.sum: \d+(-\d+)? -> \d+ cycles`).MatchString(grown.stdout) ||
		!strings.Contains(grown.stdout, "beside its cycles: memory: the same instructions") {
		t.Errorf("the wider record under --cycles: exit %d, want 1 naming lay.sum alone, as memory\n%s", grown.code, grown.stdout)
	}
	start = time.Now()
	blind := recordIn(t, dir, "--instructions", "HEAD~1", "HEAD")
	tookInstr := time.Since(start)
	if blind.code != 0 {
		t.Errorf("the wider record under --instructions: exit %d, want 0 (it cannot see it)\n%s", blind.code, blind.stdout)
	}
	t.Logf("record --cycles took %s, --instructions %s (%.2fx)", tookCycles.Round(time.Second), tookInstr.Round(time.Second), tookCycles.Seconds()/tookInstr.Seconds())

	// The whole process's profile: cycles, instructions and the cache
	// events, each a sample type pprof reads.
	p, err := loaders.Load(filepath.Join(out, "head", "example.com", "lay", "BenchmarkSum.instructions.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type)
	}
	if !slices.Equal(types, []string{"cycles", "instructions", "dr", "dw", "i1mr", "d1mr", "d1mw", "ilmr", "dlmr", "dlmw"}) {
		t.Errorf("sample types %q", types)
	}
}

// cyclesProfile is one process's estimated cycles over work ops: each
// function's events (instructions, reads, first-level read misses; the
// others zero), by name, as record --cycles makes of a dump.
func cyclesProfile(t *testing.T, work float64, events map[string][3]int64) *profile.Profile {
	t.Helper()
	self := map[string]int64{}
	for name, ev := range events {
		self[name] = ev[0]
	}
	p := testutil.CountProfile(work, self)
	for _, e := range valgrind.CacheEvents[1:] {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: e, Unit: "count"})
	}
	for _, s := range p.Sample {
		ev := events[s.Location[0].Line[0].Function.Name]
		s.Value = []int64{ev[0], ev[1], 0, 0, ev[2], 0, 0, 0, 0}
	}
	q, err := valgrind.EstimateCycles(p)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestCyclesBeside checks record's report of estimated cycles: a function
// whose cycles grew with the same instructions is shown as memory, one
// whose instructions grew as work, and a report of instructions gets no
// such lines; --cycles and --instrument cycles choose counting with the
// cache simulation, and time's flags are refused beside them.
func TestCyclesBeside(t *testing.T) {
	base := cyclesProfile(t, 10, map[string][3]int64{"m.sweep": {100_000, 20_000, 1_000}, "m.hash": {50_000, 0, 0}})
	head := cyclesProfile(t, 10, map[string][3]int64{"m.sweep": {100_000, 20_000, 4_000}, "m.hash": {60_000, 0, 0}})
	rep, err := diff.CompareCounts(base, head, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writeCyclesBeside(&b, exactResult{base: base, head: head, report: rep})
	out := b.String()
	for _, want := range []string{
		"regressed m.sweep: 10000 -> 10000 instructions (+0.00%) beside its cycles: memory: the same instructions, other cache misses",
		"regressed m.hash: 5000 -> 6000 instructions (+20.00%) beside its cycles: work: its instructions moved too",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	irep, err := diff.CompareCounts(testutil.CountProfile(1, map[string]int64{"m.f": 10}), testutil.CountProfile(1, map[string]int64{"m.f": 20}), nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if writeCyclesBeside(&b, exactResult{report: irep}); b.Len() != 0 {
		t.Errorf("a report of instructions got %q", b.String())
	}

	if g := (Config{Instructions: true, Cycles: true}).cache(); g == nil || *g != valgrind.CIGeometry {
		t.Errorf("cycles' cache geometry %v, want %v", g, valgrind.CIGeometry)
	}
}
