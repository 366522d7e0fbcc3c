// Package valgrind issues valgrind client requests from Go without cgo, for
// the exact-cost instrument: a program run under
//
//	valgrind --tool=callgrind --instr-atstart=no
//
// switches callgrind's instrumentation on around the code it measures
// (StartInstrumentation, StopInstrumentation), so that the instruction
// counts of callgrind's output hold that code and not the runtime's start,
// the test framework or whatever else the process ran.
//
// A client request is the instruction sequence valgrind.h's
// VALGRIND_DO_CLIENT_REQUEST macro emits, written here in Go assembly
// (valgrind_amd64.s, valgrind_arm64.s): a "special preamble" of rotations
// that leave a register as it was, then an instruction that exchanges a
// register with itself (amd64) or ors it with itself (arm64), with the
// address of the request's six words (code and five arguments) and a
// default result in fixed registers. Valgrind recognizes the sequence when
// it translates the code and answers the request; run natively it does
// nothing and yields the default, in a few nanoseconds, so the requests may
// stay in code that also runs without valgrind. On architectures other than
// amd64 and arm64 every request yields the default.
//
// A Go program needs GODEBUG=asyncpreemptoff=1 under callgrind: the
// runtime's preemption signals otherwise make callgrind fail an assertion
// (in vgCallgrind_post_signal). For counts that repeat from run to run, run
// it also with GOGC=off and GOMAXPROCS=1, so that no collector or other
// goroutine runs while instrumentation is on, and with --instr-atstart=no,
// so that instrumentation is on only between StartInstrumentation and
// StopInstrumentation. Instrumentation and collection are callgrind's,
// not a goroutine's: every thread that runs while they are on is counted,
// the runtime's monitor thread (sysmon) included. Callgrind names functions
// from the binary's ELF symbol table: in a binary linked with -s, as go
// test links the test binaries it runs (not those of go test -c), it names
// them by address.
package valgrind

import (
	"runtime"
	"unsafe"
)

// Request codes, from valgrind.h and callgrind.h. A tool's requests start
// at VG_USERREQ_TOOL_BASE(a, b), ((a)&0xff)<<24 | ((b)&0xff)<<16; callgrind's
// are VG_USERREQ_TOOL_BASE('C','T') and on, in the order of callgrind.h's
// enum.
const (
	runningOnValgrind = 0x1001

	callgrindBase        = 'C'<<24 | 'T'<<16 // 0x43540000
	dumpStats            = callgrindBase + 0
	zeroStats            = callgrindBase + 1
	toggleCollect        = callgrindBase + 2
	dumpStatsAt          = callgrindBase + 3
	startInstrumentation = callgrindBase + 4
	stopInstrumentation  = callgrindBase + 5
)

// do issues request code with arguments args (at most five) and returns
// valgrind's answer, or def when the program does not run under valgrind
// or the request is not one valgrind or its tool knows.
func do(def, code uintptr, args ...uintptr) uintptr {
	var block [6]uintptr
	block[0] = code
	copy(block[1:], args)
	return request(&block, def)
}

// RunningOnValgrind reports how deeply the program runs under valgrind: 0
// when it runs natively, 1 under valgrind, 2 under valgrind under valgrind,
// and so on (valgrind.h's RUNNING_ON_VALGRIND).
func RunningOnValgrind() int {
	return int(do(0, runningOnValgrind))
}

// DumpStats makes callgrind write the costs collected so far to a new dump
// file and zero them (CALLGRIND_DUMP_STATS; for the current thread only,
// says callgrind's manual). The file is callgrind's
// output file with a sequence number appended (callgrind.out.<pid>.1, or
// F.1 for --callgrind-out-file=F). Without callgrind it does nothing.
func DumpStats() {
	do(0, dumpStats)
}

// DumpStatsAt is DumpStats with reason, which the dump file names in its
// "desc: Trigger: Client Request: ..." line (CALLGRIND_DUMP_STATS_AT).
// Callgrind reads reason up to its first NUL byte, if it has one.
func DumpStatsAt(reason string) {
	// A copy ending in NUL, for callgrind reads a C string. Its address
	// goes to valgrind as an integer, which keeps nothing alive: KeepAlive
	// does. Nothing between the conversion and the request can move a
	// goroutine's stack, should the copy be on it: request is a leaf
	// without a frame, which the runtime neither grows nor preempts.
	b := make([]byte, len(reason)+1)
	copy(b, reason)
	do(0, dumpStatsAt, uintptr(unsafe.Pointer(&b[0])))
	runtime.KeepAlive(b)
}

// ZeroStats makes callgrind zero the costs collected so far
// (CALLGRIND_ZERO_STATS; for the current thread only, says callgrind's
// manual). Without callgrind it does nothing.
func ZeroStats() {
	do(0, zeroStats)
}

// ToggleCollect makes callgrind stop collecting costs if it collects them
// and start if it does not (CALLGRIND_TOGGLE_COLLECT). Collection is what
// --collect-atstart sets at the start; unlike instrumentation, it can be
// switched cheaply, but the program runs instrumented, and slowly, while
// it is off. Without callgrind it does nothing.
func ToggleCollect() {
	do(0, toggleCollect)
}

// StartInstrumentation makes callgrind instrument the code that runs from
// here on (CALLGRIND_START_INSTRUMENTATION), for programs run with
// --instr-atstart=no, which run uninstrumented, with valgrind's least
// slowdown, until then. Switching instrumentation discards every
// translation valgrind made so far, which costs time but no counted
// instructions; callgrind's call stacks start empty here. Without
// callgrind it does nothing.
func StartInstrumentation() {
	do(0, startInstrumentation)
}

// StopInstrumentation makes callgrind stop instrumenting code
// (CALLGRIND_STOP_INSTRUMENTATION); the costs collected so far stay, for
// the dump at exit or DumpStats. Without callgrind it does nothing.
func StopInstrumentation() {
	do(0, stopInstrumentation)
}
