// Package gorun profiles one run of a Go workload of the verdict benchmark
// and writes the profile with hotbudget's record of the work the run did.
package gorun

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/perfevent"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/internal/threadprof"
)

// Line is the prefix of the line Profile writes to standard error saying
// which sampler ran, at what rate, and how much of the process's CPU time
// was spent on the sampled thread:
//
//	gorun: sampler=perf samples=N thread_cpu_s=T process_cpu_s=P rate_hz=R lost=L
//
// The generator (testdata/verdict/gen) copies these fields into
// RECORDING.tsv.
const Line = "gorun: "

// Profile runs work on the calling goroutine, its thread sampled by the
// Linux cpu-clock perf event every perfevent.DefaultPeriod of its CPU time
// and symbolised as perfassert's Capture does (internal/threadprof), and
// writes the profile to path, gzipped, with a meta.Record naming the work
// unit and the operations work reports having done, and the CPU time the
// process used meanwhile (getrusage, user+sys). The workloads start no
// goroutines; the runtime's own threads (garbage collection workers) are
// not sampled, and the line Profile writes to standard error says how much
// CPU time they took. Where perf events are refused it says so and falls
// back to runtime/pprof at its default rate (100 Hz), all threads sampled.
func Profile(path, name, unit string, work func() int) error {
	var (
		ops     int
		p       *profile.Profile
		rate    int
		sampler string
		thread  time.Duration
		lost    uint64
	)
	before := testutil.CPUTime().Nanoseconds()
	res, err := threadprof.Record(perfevent.DefaultPeriod, func() { ops = work() })
	switch {
	case err == nil:
		p, thread, lost = res.Profile, res.ThreadCPU, res.Lost
		rate, sampler = int(time.Second/perfevent.DefaultPeriod), "perf"
	case errors.Is(err, perfevent.ErrUnavailable):
		fmt.Fprintf(os.Stderr, "gorun: the perf sampler is unavailable (%v); profiling with runtime/pprof at 100 Hz instead (on Linux, `sysctl kernel.perf_event_paranoid=2` allows perf events)\n", err)
		before = testutil.CPUTime().Nanoseconds()
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			return err
		}
		ops = work()
		pprof.StopCPUProfile()
		if p, err = profile.Parse(&buf); err != nil {
			return fmt.Errorf("reading back the profile: %w", err)
		}
		rate, sampler = 100, "pprof"
	default:
		return err
	}
	used := testutil.CPUTime().Nanoseconds() - before
	if sampler == "pprof" {
		thread = time.Duration(used) // all threads sampled
	}
	var n int64
	for _, s := range p.Sample {
		n += s.Value[0]
	}
	fmt.Fprintf(os.Stderr, "%ssampler=%s samples=%d thread_cpu_s=%.3f process_cpu_s=%.3f rate_hz=%.0f lost=%d\n",
		Line, sampler, n, thread.Seconds(), float64(used)/1e9, float64(n)/max(thread.Seconds(), 1e-9), lost)
	meta.Set(p, meta.Record{
		Name:     name,
		Build:    runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		RateHz:   rate,
		WorkUnit: unit,
		Runs:     []meta.Run{{Work: float64(ops), CPUNanos: used}},
	})
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
