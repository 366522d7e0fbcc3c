// Package perfexec runs a program with Linux perf events sampling it from
// its first instruction, every thread it starts included, and turns the
// samples into a pprof CPU profile symbolised from the program's binary.
//
// The events must be open before the program runs, and the kernel maps the
// ring buffer of an inherited per-task event only when it is bound to one
// CPU. So Run starts a trampoline: a copy of the current executable, which
// imports this package, whose init (on the main thread, that is the
// process's leader task) waits on a pipe. Run opens one cpu-clock event per
// CPU on the trampoline's pid (inherit, enable_on_exec, disabled), lets it
// go, and the trampoline execs the program from that thread: the events
// stay on the leader task, start at the exec, and every thread the program
// creates inherits them. Samples are read from the rings while it runs.
//
// A program built on this package (a command, or a test binary through a
// test that imports it) is a trampoline when the environment variable
// named by TrampolineEnv is set; nothing happens otherwise.
package perfexec

import (
	"errors"
	"time"

	"github.com/hotbudget/hotbudget/internal/perfevent"
)

// TrampolineEnv is the environment variable that makes a program that
// imports this package a trampoline (see the package comment). Run sets
// it for the trampoline alone; the program it execs does not see it.
const TrampolineEnv = "HOTBUDGET_PERFEXEC"

// ErrUnavailable is matched (errors.Is) by Run's error when the system
// refuses perf events: the caller may fall back to another profiler.
var ErrUnavailable = perfevent.ErrUnavailable

// errNoTrampoline is Run's error when the trampoline did not answer.
var errNoTrampoline = errors.New("the trampoline did not start: does the executable import internal/perfexec?")

// Options say how to sample.
type Options struct {
	// Period is the CPU time between samples of a thread (default
	// DefaultPeriod).
	Period time.Duration
	// Pages is the ring buffer of each CPU, in pages (default 256).
	Pages int
	// Trampoline is the executable to start as the trampoline (default
	// os.Executable()): it must import this package.
	Trampoline string
}

// DefaultPeriod is the sampling period when Options.Period is 0: 100µs,
// 10 kHz. It is shorter than perfevent's default on purpose: on the 2-core
// virtual machine this was measured on, a benchmark whose iterations hand
// work to a goroutine (about 250µs an iteration) was sampled with a bias
// at 200µs and 211µs (a frameless leaf at 14-15% of the samples in five
// runs, against 25-26% at 100µs and 150µs and 17-28% by runtime/pprof in
// the same runs), while a benchmark without goroutines gave the same
// shares at every period. The cost is the kernel's time to take the
// samples, which the profile does not see (it samples user time).
const DefaultPeriod = 100 * time.Microsecond

// Mapping is where the program's executable was mapped: a run-time
// address a in [Start, Limit) is at file offset a-Start+Offset.
type Mapping struct {
	Start, Limit, Offset uint64
	Path                 string
}

// Result is what a run sampled.
type Result struct {
	// Samples of the program's own process (not of processes it
	// started), in the order each CPU's ring held them.
	Samples []perfevent.Sample
	// Lost counts the samples the kernel dropped because a ring was full.
	Lost uint64
	// Mapping of the program's executable text, read from /proc while the
	// program ran; zero if it was not seen (a program that ends at once).
	Mapping Mapping
	// Path is the program's executable, absolute.
	Path string
	// Period is the sampling period asked for.
	Period time.Duration
	// UserTime is the user CPU time of the program, its threads included
	// (the time the samples can see: kernel time is not sampled).
	UserTime time.Duration
	// Wall is the time from exec to exit.
	Wall time.Duration
	// Start is when the program was let go.
	Start time.Time
}

// Rate is the number of samples per second of user CPU time that the run
// delivered: 1/Period when nothing was lost or refused.
func (r *Result) Rate() float64 {
	if r.UserTime <= 0 {
		return 0
	}
	return float64(len(r.Samples)) / r.UserTime.Seconds()
}
