package perfassert

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
)

type recT struct{ errs, logs []string }

func (r *recT) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recT) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// TestReportReport pins how a diff report becomes a failure independently
// of diff.Compare: only Regressed rows fail, the sides are named, and the
// report's warnings follow.
func TestReportReport(t *testing.T) {
	rep := &diff.Report{
		Settings: diff.DefaultSettings,
		Base:     diff.Side{Runs: 1, Samples: 100},
		Head:     diff.Side{Runs: 1, Samples: 100},
		Rows: []diff.Row{
			{Name: "main.slow", Verdict: diff.Regressed, Relative: 0.6, P: 0.001, Q: 0.002, Test: "sampling"},
			{Name: "main.fast", Verdict: diff.Improved, Relative: -0.6, P: 0.001, Q: 0.002, Test: "sampling"},
			{Name: "main.newfn", Verdict: diff.New},
		},
		Warnings: []string{"only one run a side"},
	}
	rt := &recT{}
	if reportReport(rt, "NoRegression", "base = baseline, head = current", "function", rep) {
		t.Fatal("passed with a regressed row")
	}
	if len(rt.errs) != 1 {
		t.Fatalf("errors: %q", rt.errs)
	}
	text := rt.errs[0]
	for _, want := range []string{"perfassert.NoRegression: 1 function regressed (base = baseline, head = current):\n", "main.slow", "warning: only one run a side"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	for _, not := range []string{"main.fast", "main.newfn"} {
		if strings.Contains(text, not) {
			t.Errorf("text lists %s, which did not regress:\n%s", not, text)
		}
	}
	if len(rep.Rows) != 3 {
		t.Errorf("the caller's report was modified: %d rows", len(rep.Rows))
	}

	rep.Rows = rep.Rows[1:]
	rt = &recT{}
	if !reportReport(rt, "NoRegression", "sides", "function", rep) || len(rt.errs) != 0 {
		t.Fatalf("no regressed row failed: %q", rt.errs)
	}
	if len(rt.logs) != 1 || !strings.Contains(rt.logs[0], "only one run a side") {
		t.Errorf("warnings of a passing comparison not logged: %q", rt.logs)
	}
}

func TestRacePath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"testdata/parse.pb.gz", "testdata/parse.race.pb.gz"},
		{"parse.pprof", "parse.race.pprof"},
		{"testdata/parse", "testdata/parse.race"},
		{"dir.v2/.hidden.pb.gz", "dir.v2/.hidden.race.pb.gz"},
		{"/abs/p.cpuprofile", "/abs/p.race.cpuprofile"},
	} {
		if got := racePath(c.in); got != c.want {
			t.Errorf("racePath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCaptureRecordsBuild: a capture says whether the race detector was
// compiled in, so MatchBaseline picks the baseline of the same build.
func TestCaptureRecordsBuild(t *testing.T) {
	p, err := CaptureProfile(func() {}, MaxDuration(20*time.Millisecond), MinSamples(1))
	if err != nil {
		t.Fatal(err)
	}
	race, known := capturedUnderRace(p)
	if !known || race != raceEnabled {
		t.Errorf("capturedUnderRace = %v, %v; want %v, true (comments %q)", race, known, raceEnabled, p.Comments)
	}
}

var neighbourSink atomic.Uint64

//go:noinline
func neighbourBurn(n int) {
	x := neighbourSink.Load() | 5
	for i := 0; i < n; i++ {
		x = x*x + uint64(i)
	}
	neighbourSink.Store(x)
}

var ownSink atomic.Uint64

//go:noinline
func ownWork(n int) {
	x := ownSink.Load() | 9
	for i := 0; i < n; i++ {
		x ^= x << 7
		x ^= x >> 9
	}
	ownSink.Store(x)
}

// TestCaptureDropsUnlabelledSamples looks at the profiler's whole rounds: a
// goroutine burning CPU beside the capture is in them (the test is not
// vacuous) and not in the capture.
func TestCaptureDropsUnlabelledSamples(t *testing.T) {
	var raw, rawBurner atomic.Int64
	coord.mu.Lock()
	coord.roundHook = func(p *profile.Profile) {
		for _, s := range p.Sample {
			raw.Add(s.Value[0])
			for _, l := range s.Location {
				if len(l.Line) > 0 && strings.HasSuffix(l.Line[0].Function.Name, ".neighbourBurn") {
					rawBurner.Add(s.Value[0])
					break
				}
			}
		}
	}
	coord.mu.Unlock()
	defer func() {
		coord.mu.Lock()
		coord.roundHook = nil
		coord.mu.Unlock()
	}()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				neighbourBurn(20_000)
			}
		}
	}()
	p, err := CaptureProfile(func() { ownWork(40_000) }, MinSamples(60), MaxDuration(4*time.Second))
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	var mine, burner int64
	for _, s := range p.Sample {
		mine += s.Value[0]
		for _, l := range s.Location {
			if len(l.Line) > 0 && strings.HasSuffix(l.Line[0].Function.Name, ".neighbourBurn") {
				burner += s.Value[0]
			}
		}
	}
	t.Logf("rounds: %d samples, %d of the neighbour; capture: %d samples, %d of the neighbour", raw.Load(), rawBurner.Load(), mine, burner)
	if rawBurner.Load() < 10 {
		t.Fatalf("the neighbour has %d samples in the profiler's rounds: it did not run beside the capture", rawBurner.Load())
	}
	if mine == 0 || float64(burner) >= 0.01*float64(mine) {
		t.Errorf("the capture holds %d of the neighbour's samples out of %d, want under 1%%", burner, mine)
	}
}
