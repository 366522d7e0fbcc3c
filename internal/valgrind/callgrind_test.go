package valgrind

import (
	"bytes"
	"cmp"
	"context"
	"debug/gosym"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/callgrind"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// childEnv tells TestCallgrindChild, run by TestCallgrind under callgrind,
// how many rounds to spin.
const childEnv = "HOTBUDGET_VALGRIND_CHILD"

// dumpReason is what TestCallgrindChild asks callgrind to name its dump.
const dumpReason = "hotbudget valgrind test"

// spinName is spin's name in callgrind's output.
const spinName = "github.com/hotbudget/hotbudget/internal/valgrind.spin"

// spin is the measured work: a few instructions a round, as many every
// run.
//
//go:noinline
func spin(n int) uint64 {
	x := uint64(1)
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// TestCallgrindChild is the program TestCallgrind runs under callgrind:
// it spins with instrumentation on, dumps the costs and says whether it
// ran under valgrind.
func TestCallgrindChild(t *testing.T) {
	arg := os.Getenv(childEnv)
	if arg == "" {
		t.Skip("the child process of TestCallgrind, run only by it under valgrind")
	}
	n, err := strconv.Atoi(arg)
	if err != nil {
		t.Fatal(err)
	}
	StartInstrumentation()
	ZeroStats()
	x := spin(n)
	StopInstrumentation()
	DumpStatsAt(dumpReason)
	fmt.Printf("child: running on valgrind %d, spun to %#x\n", RunningOnValgrind(), x)
}

// TestCallgrind runs TestCallgrindChild under callgrind, with
// instrumentation on only around spin, three times: spinning n rounds
// twice and 2n once. Spin's self cost is the same in the first two and
// twice that in the third, and the rest of the process is nowhere.
func TestCallgrind(t *testing.T) {
	vg := testutil.Tool(t, "valgrind", "apt-get install valgrind")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, st := funcTable(t, exe)
	const n = 1 << 20
	a := runChild(t, vg, exe, st, n)
	b := runChild(t, vg, exe, st, n)
	c := runChild(t, vg, exe, st, 2*n)
	t.Logf("spin's self Ir: %d and %d for %d rounds, %d for %d", a, b, n, c, 2*n)
	if a != b {
		t.Errorf("spin's self Ir differs between two runs of %d rounds: %d, %d", n, a, b)
	}
	if a < n {
		t.Errorf("spin's self Ir is %d for %d rounds: less than one instruction a round", a, n)
	}
	if d := float64(c)/float64(2*a) - 1; d < -0.01 || d > 0.01 {
		t.Errorf("spin's self Ir is %d for %d rounds and %d for %d: %+.2f%%, not twice", a, n, c, 2*n, 100*d)
	}
}

// childLine is what TestCallgrindChild prints.
var childLine = regexp.MustCompile(`(?m)^child: running on valgrind (\d+), spun to`)

// runChild runs TestCallgrindChild of the test binary exe, spinning n
// rounds, under callgrind, checks what it reports and the dump, and
// returns spin's self Ir. The functions of exe are st.
func runChild(t *testing.T, vg, exe string, st *gosym.Table, n int) int64 {
	t.Helper()
	out := filepath.Join(t.TempDir(), "callgrind.out")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, vg, "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file="+out,
		exe, "-test.run=^TestCallgrindChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(n),
		"GODEBUG=asyncpreemptoff=1", "GOGC=off", "GOMAXPROCS=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("valgrind: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	m := childLine.FindStringSubmatch(stdout.String())
	if m == nil || !strings.Contains(stdout.String(), "--- PASS: TestCallgrindChild ") {
		t.Fatalf("child did not run or did not pass; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	if m[1] == "0" {
		t.Errorf("RunningOnValgrind() = 0 under valgrind")
	}
	p, desc := readDump(t, out)
	if want := "Client Request: " + dumpReason; !strings.Contains(desc, want) {
		t.Errorf("dump's desc lines %q lack %q", desc, want)
	}
	self, total := selfCosts(t, p, st)
	spun := self[spinName]
	t.Logf("%d rounds: %v under valgrind, RunningOnValgrind %s; %d Ir in all, spin's self %d", n, wall.Round(time.Millisecond), m[1], total, spun)
	// The rest is the requests' ends and starts, the test's few lines
	// between them and the runtime's monitor thread, sysmon, which runs
	// while spin does, asks it to yield after 10ms and so makes the
	// scheduler run when spin returns: a few thousand instructions.
	names := slices.Collect(maps.Keys(self))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(self[b], self[a]) })
	for i, name := range names {
		if i < 8 && name != spinName {
			t.Logf("  %8d %s", self[name], name)
		}
		if strings.HasPrefix(name, "testing.") || name == "runtime.main" || name == "main.main" {
			t.Errorf("%s, which runs outside the instrumented code, costs %d Ir", name, self[name])
		}
	}
	if rest := total - spun; rest*100 > total {
		t.Errorf("%d of %d Ir outside spin: more than 1%%", rest, total)
	}
	return spun
}

// readDump returns the dump TestCallgrindChild asked for, as a profile,
// and its desc lines. Callgrind writes a dump asked for while it runs to
// out.1 and the rest of the costs at exit to out.
func readDump(t *testing.T, out string) (*profile.Profile, string) {
	t.Helper()
	data, err := os.ReadFile(out + ".1")
	if err != nil {
		files, _ := filepath.Glob(out + "*")
		t.Fatalf("%v; callgrind wrote %q", err, files)
	}
	var desc []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "desc:") {
			desc = append(desc, line)
		}
	}
	p, err := callgrind.Parse(bytes.NewReader(data), pbuild.Options{Name: out + ".1"})
	if err != nil {
		t.Fatalf("parsing %s.1: %v", out, err)
	}
	return p, strings.Join(desc, "\n")
}

// selfCosts returns the instructions of p by the function that executed
// them, and their total. The test binary go test runs has no symbol table
// (go test links it with -s, unless -c), and callgrind names a function
// it finds no symbol for by an address in it ("0x000000000056b620"): the
// functions st lists name those.
func selfCosts(t *testing.T, p *profile.Profile, st *gosym.Table) (map[string]int64, int64) {
	t.Helper()
	idx := -1
	for i, typ := range p.SampleType {
		if typ.Type == callgrind.EventType("Ir") {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("profile has no instructions among %v", p.SampleType)
	}
	self := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		name := "?"
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 {
			name = s.Location[0].Line[0].Function.Name
		}
		if hex, ok := strings.CutPrefix(name, "0x"); ok {
			if pc, err := strconv.ParseUint(hex, 16, 64); err == nil {
				if fn := st.PCToFunc(pc); fn != nil {
					name = fn.Name
				}
			}
		}
		self[name] += s.Value[idx]
		total += s.Value[idx]
	}
	return self, total
}
