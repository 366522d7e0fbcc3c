// Package perfevent samples threads with Linux perf events, in pure Go.
//
// Open starts the software cpu-clock event (PERF_COUNT_SW_CPU_CLOCK), which
// the kernel drives from a high-resolution timer rather than the scheduler
// tick, so a thread is sampled every Period of the CPU time it runs, at
// kilohertz rates, where Go's runtime/pprof is held to the tick (250 Hz on
// many kernels). Each sample carries the thread, the time and the user-space
// callchain the kernel unwound along the frame pointers (Go keeps them on
// amd64 and arm64); samples are read from the event's mmap ring buffer.
//
// Kernel frames are never sampled (exclude_kernel, exclude_hv,
// exclude_callchain_kernel), so a process may sample itself and its
// children at kernel.perf_event_paranoid 2, the default of most
// distributions. Where the kernel refuses (a higher paranoid level, a
// seccomp filter, a kernel without perf events, or another system), Open
// returns an error matching ErrUnavailable that says why and how to allow it.
package perfevent

import (
	"errors"
	"time"
)

// ErrUnavailable is matched (errors.Is) by the error Open returns when the
// system does not allow perf events here; the error's text says why.
var ErrUnavailable = errors.New("perf events are unavailable")

// Config says what to sample.
type Config struct {
	// Pid is the thread (a tid) or process to sample: 0 is the calling
	// thread, -1 every task on CPU (which needs paranoid 0 or lower).
	Pid int
	// CPU restricts sampling to one CPU; -1 samples the task on any CPU.
	// Inherit with an mmap buffer needs one event per CPU (CPU >= 0).
	CPU int
	// Period is the CPU time between samples (default DefaultPeriod).
	Period time.Duration
	// Inherit extends the event to the threads and processes the task
	// creates after the event is opened; their samples go to this event's
	// buffer.
	Inherit bool
	// EnableOnExec starts the (Disabled) event when the task calls exec.
	EnableOnExec bool
	// Disabled opens the event stopped; Enable starts it.
	Disabled bool
	// Pages is the size of the ring buffer in pages, a power of two
	// (default 64: 256 KiB with 4 KiB pages, about 1,500 samples of a
	// 20-deep stack).
	Pages int
	// LeafRet asks for Sample.LeafRet (see there).
	LeafRet bool
}

// DefaultPeriod is the sample period when Config.Period is 0: 2 kHz.
//
// Two costs bound it from below on the 2-core virtual machine it was
// measured on. The kernel re-arms its timer from the time it fired and
// skips the periods it fired late for, so short periods deliver fewer
// samples than they claim: a spinning thread's samples stood for 99% of its
// user CPU time at 200µs, 97% at 150µs, 66% at 100µs (6.5 kHz delivered).
// And each timer interrupt slows the sampled code by more than its own
// handling (a virtual machine's exits, some 60µs a sample there): a
// function used 36% more CPU time per call at 250µs, 15% at 500µs and 6%
// at 1ms (perfassert's BenchmarkSamplerOverhead, load 11-13 on 2 cores;
// on a quiet machine of the same kind, 2026-11-26, sampled and unsampled
// blocks interleaved: +11-15% at 500µs, +5% at 1ms, +25% at 250µs, some
// 50-70µs a sample; without the callchain or LeafRet, +9.4% against
// +10.0% at 500µs: the cost is the timer interrupt's, not the unwinding's).
//
// The cost is the machine's, not this package's: `perf record -e cpu-clock`
// on a spinning Go program there slowed it by 23% at 250µs, 11% at 500µs,
// 8-9% at 600µs, 6-7% at 700µs and 2-5% at 1ms, as this sampler does
// (BenchmarkSamplerOverhead, quiet, same day: +12.1-12.3% at 500µs,
// +9.2-9.9% at 600µs, +7.9-8.1% at 700µs).
//
// 500µs trades that cost for the samples golden baselines need: keeping a
// share of the samples of real captures of a third-party module
// (perfassert's TestMeasureProcessBaselines, HOTBUDGET_MEASURE_THIN, five
// recordings, baselines of 16 processes confirmed at 0.1, 150 each) as a
// slower sampler would have taken them, a function made 43-51% slower was
// named alone in 90/100/70/97/96% of comparisons at 500µs, 91/99/31/89/70%
// at 600µs (0.833 kept) and 93/100/23/79/58% at 700µs (0.714 kept); with
// baselines of 8 processes, halving the samples (1ms) cut it from
// 75/93/19/78% to 47/57/7/25%.
const DefaultPeriod = 500 * time.Microsecond

// DefaultPages is the ring buffer size when Config.Pages is 0.
const DefaultPages = 64

// Sample is one sample of the cpu-clock event.
type Sample struct {
	Pid, Tid uint32
	// Time is the kernel's CLOCK_MONOTONIC when the sample was taken, in
	// nanoseconds.
	Time uint64
	// Period is the CPU time the sample stands for, in nanoseconds.
	Period uint64
	// Callchain holds the user-space program counters, innermost first,
	// without the kernel's PERF_CONTEXT markers: Callchain[0] is the
	// interrupted instruction, the others return addresses, as the kernel
	// found them along the frame pointers.
	Callchain []uint64
	// LeafRet, when Config.LeafRet asked for it, is the return address of
	// the interrupted function if that function had not set up a frame
	// (a Go function without a frame, or one interrupted in its prologue):
	// on amd64 the word at the stack pointer, on arm64 the link register.
	// A frame-pointer walk cannot see that function's caller, so
	// Callchain lacks it; a user who knows the function's frame layout
	// (a symboliser) decides whether LeafRet belongs after Callchain[0].
	// 0 when not asked for or not known.
	LeafRet uint64
}
