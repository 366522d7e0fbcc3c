package perfassert_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/examples/capture"
	"github.com/hotbudget/hotbudget/limits"
	"github.com/hotbudget/hotbudget/perfassert"
)

// headroomOut names the file a child of BenchmarkHeadroom writes its
// capture to.
const headroomOut = "HOTBUDGET_HEADROOM_OUT"

const headroomFunc = "github.com/hotbudget/hotbudget/examples/capture.Parse"

// TestHeadroomChild is one capture of BenchmarkHeadroom, in a process of
// its own; skipped unless the benchmark runs it.
func TestHeadroomChild(t *testing.T) {
	out := os.Getenv(headroomOut)
	if out == "" {
		t.Skip("a capture for BenchmarkHeadroom")
	}
	input := capture.Input(20000)
	p := perfassert.Capture(t, func() { capture.Parse(input) })
	if p == nil {
		t.Fatal("no capture")
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
}

var suggestedLimit = regexp.MustCompile(`headroom: a limit of (\S+) \(`)

// headroomOf is the value a per-iteration MaxTotalTime on fn checks in p,
// and the limit its text suggests (0 when it suggests none).
func headroomOf(tb testing.TB, p *profile.Profile, fn string) (value, suggested time.Duration, text string) {
	tb.Helper()
	r, err := limits.Check(p, fn, limits.Limit{Quantity: limits.TotalTime, Time: time.Hour}, perfassert.PerIteration())
	if err != nil {
		tb.Fatal(err)
	}
	text = r.String()
	if m := suggestedLimit.FindStringSubmatch(text); m != nil {
		d, err := time.ParseDuration(strings.ReplaceAll(m[1], "µ", "u"))
		if err != nil {
			tb.Fatalf("suggested limit %q: %v", m[1], err)
		}
		suggested = d
	}
	return time.Duration(r.Value), suggested, text
}

// BenchmarkHeadroom measures the headroom a time limit's message suggests
// (issue 32): it takes one capture of examples/capture.Parse in a process
// of its own, reads the limit its MaxTotalTime(PerIteration) text says
// would hold 99 times in 100, then takes HOTBUDGET_HEADROOM_N (default 100)
// fresh captures of the unchanged code, each in a process of its own, in
// blocks of ten: every other block beside two goroutines of this process
// burning a CPU each. It reports how many exceeded the limit, and, taking
// each fresh capture in turn as the one the limit came from, how many of
// the others exceeded its limit. A measurement, not a benchmark of speed:
//
//	go test ./perfassert -run '^$' -bench Headroom -benchtime 1x -timeout 60m
//
// HOTBUDGET_HEADROOM_KEEP names a directory that keeps the captures.
func BenchmarkHeadroom(b *testing.B) {
	n := 100
	if s := os.Getenv("HOTBUDGET_HEADROOM_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 2 {
			b.Fatalf("HOTBUDGET_HEADROOM_N=%q: want a count of 2 or more", s)
		}
	}
	dir := os.Getenv("HOTBUDGET_HEADROOM_KEEP")
	if dir == "" {
		dir = b.TempDir()
	}
	for b.Loop() {
		measureHeadroom(b, dir, n)
	}
}

func measureHeadroom(b *testing.B, dir string, n int) {
	captureIn := func(name string) *profile.Profile {
		out := filepath.Join(dir, name+".pb.gz")
		cmd := exec.Command(os.Args[0], "-test.run", "^TestHeadroomChild$", "-test.count", "1")
		cmd.Env = append(os.Environ(), headroomOut+"="+out)
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("capture %s: %v\n%s", name, err, msg)
		}
		f, err := os.Open(out)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		p, err := profile.Parse(f)
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	load := func() string {
		s, _ := os.ReadFile("/proc/loadavg")
		return strings.Fields(string(s) + " ?")[0]
	}
	ref := captureIn("ref")
	value, limit, text := headroomOf(b, ref, headroomFunc)
	if limit == 0 {
		b.Fatalf("the reference capture suggests no limit:\n%s", text)
	}
	b.Logf("reference capture (load %s):\n%s", load(), text)

	type fresh struct {
		value, suggested time.Duration
		busy             bool
	}
	var caps []fresh
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := range n {
		busy := i/10%2 == 1
		if busy && i%10 == 0 {
			stop.Store(false)
			for range 2 {
				wg.Go(func() {
					runtime.LockOSThread()
					x := uint64(1)
					for !stop.Load() {
						for range 1 << 16 {
							x = x*6364136223846793005 + 1
						}
					}
					spinSink.Add(x)
				})
			}
		}
		v, s, _ := headroomOf(b, captureIn(fmt.Sprint(i+1)), headroomFunc)
		caps = append(caps, fresh{v, s, busy})
		if busy && (i%10 == 9 || i == n-1) {
			stop.Store(true)
			wg.Wait()
		}
	}
	var fails, busyFails, busyN int
	values := make([]time.Duration, 0, n)
	for _, c := range caps {
		values = append(values, c.value)
		if c.busy {
			busyN++
		}
		if c.value > limit {
			fails++
			if c.busy {
				busyFails++
			}
		}
	}
	// Each fresh capture as the one the limit came from.
	var pairs, pairFails, refs, badRefs int
	for i, r := range caps {
		if r.suggested == 0 {
			continue
		}
		refs++
		f := 0
		for j, c := range caps {
			if i != j && c.value > r.suggested {
				f++
			}
		}
		pairs += len(caps) - 1
		pairFails += f
		if f*50 > len(caps)-1 {
			badRefs++
		}
	}
	slices.Sort(values)
	b.Logf("%s per iteration in the reference capture; suggested limit %s (%.2f times)", value, limit, float64(limit)/float64(value))
	b.Logf("%d fresh captures (%d beside two busy loops), load now %s: %s-%s per iteration, median %s",
		n, busyN, load(), values[0], values[n-1], values[n/2])
	b.Logf("exceeded the suggested limit: %d of %d (%d of %d beside busy loops)", fails, n, busyFails, busyN)
	if refs > 0 {
		b.Logf("each fresh capture's suggestion (%d suggested one) against the others: %d of %d exceed it (%.2f%%); %d suggestions failed more than 2 in 100",
			refs, pairFails, pairs, 100*float64(pairFails)/float64(pairs), badRefs)
	}
	b.ReportMetric(100*float64(fails)/float64(n), "fails/100")
}
