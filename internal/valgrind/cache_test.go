package valgrind

import (
	"bytes"
	"context"
	"debug/gosym"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/testutil"
)

// cacheChildEnv tells TestCacheChild, run by TestCyclesFixedGeometry under
// callgrind, to sweep its records.
const cacheChildEnv = "HOTBUDGET_VALGRIND_CACHE_CHILD"

// sweepName is sweep's name in callgrind's output.
const sweepName = "github.com/hotbudget/hotbudget/internal/valgrind.sweep"

// sweep reads one word of every 64-byte record of recs, rounds times: 1
// MiB, larger than any first-level cache, smaller than most last levels.
//
//go:noinline
func sweep(recs []int64, rounds int) int64 {
	var s int64
	for range rounds {
		for i := 0; i < len(recs); i += 8 {
			s += recs[i]
		}
	}
	return s
}

// TestCacheChild is the program TestCyclesFixedGeometry runs under
// callgrind: it sweeps its records with instrumentation on and dumps.
func TestCacheChild(t *testing.T) {
	if os.Getenv(cacheChildEnv) == "" {
		t.Skip("the child process of TestCyclesFixedGeometry, run only by it under valgrind")
	}
	recs := make([]int64, 1<<17)
	StartInstrumentation()
	ZeroStats()
	s := sweep(recs, 4)
	StopInstrumentation()
	DumpStatsAt(dumpReason)
	fmt.Printf("child: swept to %d\n", s)
}

// TestCyclesFixedGeometry estimates sweep's cycles on two simulated hosts
// with other caches: by default callgrind simulates the host's caches, and
// another host's (given as a host's own options would be) estimates other
// cycles; with Run's Cache, whose options come after any others, both
// estimate the same cycles, in every process.
func TestCyclesFixedGeometry(t *testing.T) {
	vg := testutil.Tool(t, "valgrind", "apt-get install valgrind")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, st := funcTable(t, exe)
	// A second host: small caches (valgrind takes the last of repeated
	// options, as it would a host's own).
	otherHost := []string{"--cache-sim=yes", "--I1=16384,4,64", "--D1=16384,4,64", "--LL=524288,8,64"}
	fixed := CIGeometry
	host := sweepCycles(t, vg, exe, st, Run{Extra: []string{"--cache-sim=yes"}})
	other := sweepCycles(t, vg, exe, st, Run{Extra: otherHost})
	onHost := sweepCycles(t, vg, exe, st, Run{Cache: &fixed})
	onOther := sweepCycles(t, vg, exe, st, Run{Cache: &fixed, Extra: otherHost})
	again := sweepCycles(t, vg, exe, st, Run{Cache: &fixed})
	t.Logf("sweep's estimated cycles: this host's caches %d, another host's %d; fixed geometry %d on this host, %d on the other, %d again", host, other, onHost, onOther, again)
	if host == other {
		t.Errorf("the two hosts' caches estimated the same cycles, %d: the second host simulates nothing else", host)
	}
	if onHost != onOther || onHost != again {
		t.Errorf("with the fixed geometry: %d on this host, %d on the other, %d again: want the same", onHost, onOther, again)
	}
}

// sweepCycles runs TestCacheChild under callgrind as run says and returns
// sweep's estimated cycles.
func sweepCycles(t *testing.T, vg, exe string, st *gosym.Table, run Run) int64 {
	t.Helper()
	run.Out = filepath.Join(t.TempDir(), "callgrind.out")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := run.Command(ctx, vg, append(os.Environ(), cacheChildEnv+"=1"), exe, "-test.run=^TestCacheChild$", "-test.count=1", "-test.v")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "--- PASS: TestCacheChild ") {
		t.Fatalf("valgrind %q: %v\nstdout:\n%s\nstderr:\n%s", run.Args(exe), err, stdout.String(), stderr.String())
	}
	p, _ := readDump(t, run.Out)
	if run.Cache != nil {
		data, err := os.ReadFile(run.Out + ".1")
		if err != nil {
			t.Fatal(err)
		}
		if g, ok, err := DumpGeometry(bytes.NewReader(data)); err != nil || !ok || g != *run.Cache {
			t.Errorf("the dump says it simulated %v (%v, %v), want %v", g, ok, err, *run.Cache)
		}
	}
	q, err := EstimateCycles(p)
	if err != nil {
		t.Fatal(err)
	}
	var cycles int64
	for _, s := range q.Sample {
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 && funcName(st, s.Location[0].Line[0].Function.Name) == sweepName {
			cycles += s.Value[0]
		}
	}
	if cycles == 0 {
		t.Fatalf("no cycles of sweep in the dump")
	}
	return cycles
}

// funcName names an address callgrind printed ("0x000000000056b620") by
// the function st says holds it.
func funcName(st *gosym.Table, name string) string {
	if hex, ok := strings.CutPrefix(name, "0x"); ok {
		if pc, err := strconv.ParseUint(hex, 16, 64); err == nil {
			if fn := st.PCToFunc(pc); fn != nil {
				return fn.Name
			}
		}
	}
	return name
}

// TestEstimateCycles checks the cost model on one sample: 100 accesses
// (80 instructions, 15 reads, 5 writes), of which 10 miss the first level
// and 4 of those the last: 90 first-level hits, 6 last-level hits, 4
// memory accesses.
func TestEstimateCycles(t *testing.T) {
	p := &profile.Profile{}
	for _, e := range []string{"instructions", "dr", "dw", "i1mr", "d1mr", "d1mw", "ilmr", "dlmr", "dlmw"} {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: e, Unit: "count"})
	}
	p.Sample = []*profile.Sample{{Value: []int64{80, 15, 5, 2, 6, 2, 1, 2, 1}}}
	q, err := EstimateCycles(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(90 + 5*6 + 35*4); q.Sample[0].Value[0] != want || q.SampleType[0].Type != CyclesType || q.DefaultSampleType != CyclesType {
		t.Errorf("cycles %d (%s, default %s), want %d", q.Sample[0].Value[0], q.SampleType[0].Type, q.DefaultSampleType, want)
	}
	if !slices.Equal(q.Sample[0].Value[1:], p.Sample[0].Value) || p.Sample[0].Value[0] != 80 {
		t.Errorf("events %v beside the cycles, want %v unchanged", q.Sample[0].Value[1:], p.Sample[0].Value)
	}
	p.SampleType = p.SampleType[:1]
	if _, err := EstimateCycles(p); err == nil || !strings.Contains(err.Error(), "cache simulation") {
		t.Errorf("a profile of instructions alone: %v", err)
	}
}

// TestDumpGeometry reads the caches a dump's header names, and refuses a
// malformed line.
func TestDumpGeometry(t *testing.T) {
	head := "version: 1\ncreator: callgrind-3.19.0\ndesc: I1 cache: 32768 B, 64 B, 8-way associative\ndesc: D1 cache: 32768 B, 64 B, 8-way associative\ndesc: LL cache: 4194304 B, 64 B, 16-way associative\ndesc: Timerange: Basic block 0 - 1\nevents: Ir Dr\n"
	g, ok, err := DumpGeometry(strings.NewReader(head))
	if err != nil || !ok || g != CIGeometry {
		t.Errorf("got %v %v %v, want %v", g, ok, err, CIGeometry)
	}
	if _, ok, err := DumpGeometry(strings.NewReader("version: 1\nevents: Ir\n")); ok || err != nil {
		t.Errorf("a dump without caches: %v %v", ok, err)
	}
	if _, _, err := DumpGeometry(strings.NewReader("desc: D1 cache: lots\n")); err == nil {
		t.Error("a malformed cache line was read")
	}
	if got := strings.Join(CIGeometry.Args(), " "); got != "--cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=4194304,16,64" {
		t.Errorf("Args: %s", got)
	}
}
