package perfassert

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/perfevent"
	"github.com/hotbudget/hotbudget/internal/samplercheck"
	"github.com/hotbudget/hotbudget/internal/suggest"
)

// Samplers. Capture samples the capturing goroutine with the Linux
// cpu-clock perf event on its (locked) thread where the system allows it,
// thousands of times a second; goroutines the captured function starts run
// on other threads and are sampled by runtime/pprof, as all of the capture
// is where perf events are refused.
const (
	samplerAuto  = ""
	samplerPerf  = "perf"
	samplerPprof = "pprof"
)

// SamplerEnv names the environment variable that picks Capture's sampler
// for the whole test binary: "pprof" forces runtime/pprof, "perf" the perf
// event (a capture then fails where perf events are refused), "auto" or
// unset the perf event where allowed. The Sampler option wins over it.
const SamplerEnv = samplercheck.SamplerEnv

// perfPeriod is the perf event's sample period: 2,000 samples a second of
// the capturing thread's CPU time, eight times what runtime/pprof delivers
// on a 250 Hz kernel (perfevent.DefaultPeriod says why not more: on the
// virtual machine it was measured on, the sampled code used 15% more CPU
// time at this period and 36% more at half of it).
const perfPeriod = perfevent.DefaultPeriod

// Sampler picks the capture's sampler: "perf" (the Linux cpu-clock perf
// event; the capture fails where perf events are refused), "pprof"
// (runtime/pprof alone, at the highest rate the kernel was measured to
// deliver, unless Rate says otherwise) or "auto" (the default: perf where
// allowed, else pprof). It overrides HOTBUDGET_SAMPLER.
func Sampler(name string) CaptureOption {
	return captureFunc(func(c *captureConfig) {
		switch name {
		case "auto":
			c.sampler, c.samplerSet = samplerAuto, true
		case samplerPerf, samplerPprof:
			c.sampler, c.samplerSet = name, true
		default:
			c.err = fmt.Errorf("perfassert: Sampler(%q): want \"perf\", \"pprof\" or \"auto\"", name)
		}
	})
}

// perfState is what the process knows of perf events: whether they open,
// and why not.
var perfState = sync.OnceValue(func() error {
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		e, err := perfevent.Open(perfevent.Config{CPU: -1, Disabled: true, Pages: 1})
		if err == nil {
			err = e.Close()
		}
		done <- err
	}()
	return <-done
})

// checkHost is samplercheck.Recent and checkAgain samplercheck.Again;
// tests replace them.
var (
	checkHost  = samplercheck.Recent
	checkAgain = samplercheck.Again
)

// probeSamples is the size of the probe made after each capture with the
// perf sampler (its own check): 100ms of CPU time at 500µs, a tenth of a
// capture's default 2,000 samples (docs/samplers.md has its cost).
const probeSamples = 200

// checkedHost is what the check of this machine's perf events found at
// perfPeriod over the last samplercheck.Window (probing now when the
// probes of that time are too few), nil when it was not made
// (samplercheck.Env=off, or it failed: the perf sampler is then trusted
// as it was before the check).
func checkedHost() *samplercheck.Result {
	if os.Getenv(samplercheck.Env) == "off" {
		return nil
	}
	r, err := checkHost(perfPeriod)
	if err != nil {
		return nil
	}
	return r
}

// checkedAfter is the capture's own check: a probe made now, judged alone
// and with the newest others. wrong names the result that found the
// samples misattributed; ok is false when no probe could be made.
func checkedAfter() (fresh, wrong *samplercheck.Result, ok bool) {
	fresh, pooled, err := checkAgain(perfPeriod, probeSamples)
	if err != nil {
		return nil, nil, false
	}
	w, _ := samplercheck.Wrong(fresh, pooled)
	if w == nil {
		// Said in the capture's line: the pool, which holds the probe.
		return pooled, nil, true
	}
	return fresh, w, true
}

// misattributed is why the perf sampler is not used on a machine whose
// samples failed the check; during is set when they failed it after a
// capture that used them (which was then redone with runtime/pprof).
type misattributed struct {
	r      *samplercheck.Result
	during bool
}

func (e misattributed) Error() string {
	when := "on this machine"
	if e.during {
		when = "it went wrong during a capture, which was redone with runtime/pprof:"
	}
	return fmt.Sprintf("%s %s; %s=perf uses it anyway, %s=off skips the check", when, e.r, SamplerEnv, samplercheck.Env)
}

// redoWith makes a capture use runtime/pprof because the perf sampler
// was found wrong during a capture of the same function.
func redoWith(why misattributed) CaptureOption {
	return captureFunc(func(c *captureConfig) { c.redo = why })
}

// visible says, for a capture whose time verdicts see less than they
// would on a quiet machine with the perf sampler (it fell back to
// runtime/pprof, or stopped at its time limit before its shares were
// precise), the smallest change of its heaviest function's share a
// comparison of two such captures tells from noise (four of the capture's
// standard errors: about √2 times 2.8), and points to the exact
// instrument. "" otherwise.
func (st *captureStats) visible() string {
	if st.top == "" || math.IsInf(st.rse, 0) || math.IsNaN(st.rse) || st.rse <= 0 {
		return ""
	}
	if !st.fellBack && !strings.HasPrefix(st.reason, "time limit") {
		return ""
	}
	return fmt.Sprintf("time verdicts on captures like this one see changes of %s's share of about %.0f%% and more; perfassert.Instructions() counts instructions exactly and sees smaller ones",
		suggest.ShortName(st.top), 400*st.rse)
}

// pprofRate is the rate runtime/pprof is asked for when it samples alone:
// the highest the kernel was measured to deliver (asking for more than it
// delivers makes every sample claim less time than it stands for).
var pprofRate = sync.OnceValues(measurePprofRate)

// measurePprofRate asks runtime/pprof for 1000 Hz while one goroutine spins
// for 100ms of its thread's CPU time, and counts the samples: the kernel's
// timer frequency caps them (250 Hz on many kernels). It returns 80% of the
// delivered rate, rounded down to 10 Hz (so that the asked rate is met on
// a busy machine, where fewer signals arrive), at least defaultRate.
func measurePprofRate() (hz int, measured float64) {
	var buf bytes.Buffer
	runtime.SetCPUProfileRate(1000)
	if err := pprof.StartCPUProfile(&buf); err != nil {
		runtime.SetCPUProfileRate(0)
		return defaultRate, 0
	}
	done := make(chan time.Duration)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0, ok := threadCPU()
		var x uint64
		for c, _ := threadCPU(); ok && c-c0 < 100*time.Millisecond; c, _ = threadCPU() {
			for range 10000 {
				x = x*6364136223846793005 + 1
			}
		}
		calibrationSink.Add(x)
		c1, _ := threadCPU()
		done <- c1 - c0
	}()
	cpu := <-done
	pprof.StopCPUProfile()
	p, err := profile.Parse(&buf)
	if err != nil || cpu <= 0 {
		return defaultRate, 0
	}
	var n int64
	for _, s := range p.Sample {
		for _, l := range s.Location {
			if len(l.Line) > 0 && l.Line[0].Function != nil && strings.HasSuffix(l.Line[0].Function.Name, "measurePprofRate.func1") {
				n += s.Value[0]
				break
			}
		}
	}
	measured = float64(n) / cpu.Seconds()
	hz = int(measured*0.8) / 10 * 10
	return min(max(hz, defaultRate), 1000), measured
}

var calibrationSink atomic.Uint64

// samplerNote is said once per test binary: which sampler ran, at what
// rate, and how to get the fast one.
var samplerNote sync.Once

// resolveSampler decides c's sampler and, for runtime/pprof alone, its rate.
func resolveSampler(c *captureConfig) error {
	want := c.sampler
	if !c.samplerSet {
		v, err := samplercheck.Sampler(os.Getenv)
		if err != nil {
			return fmt.Errorf("perfassert: %w", err)
		}
		want = v
		if v == "auto" {
			want = samplerAuto
		}
	}
	c.refused, c.checked = nil, nil
	if c.hzSet && !c.samplerSet {
		want = samplerPprof // Rate is runtime/pprof's
	}
	if c.redo.r != nil {
		c.refused = c.redo
		want = samplerPprof
	}
	if want != samplerPprof {
		if err := perfState(); err != nil {
			if want == samplerPerf {
				return fmt.Errorf("perfassert: the perf sampler was asked for: %w", err)
			}
			c.refused = err
			want = samplerPprof
		} else if want == samplerPerf {
			// Asked for: used without a check.
		} else if r := checkedHost(); r != nil && r.Misattributes() {
			c.refused = misattributed{r: r}
			want = samplerPprof
		} else {
			want = samplerPerf
			c.checked = r
		}
	}
	c.sampler = want
	if want == samplerPprof && !c.hzSet {
		c.hz, _ = pprofRate()
	}
	if want == samplerPerf && !c.hzSet {
		c.hz = defaultRate // goroutines the function starts: no runtime warning at 100 Hz
	}
	return nil
}

// samplerText says which sampler took a capture's samples, at what rate.
func samplerText(c captureConfig, delivered float64) string {
	if c.sampler == samplerPerf {
		s := fmt.Sprintf("sampler: Linux perf cpu-clock event on the capturing thread, every %s of its CPU time (%.0f Hz asked", perfPeriod, 1/perfPeriod.Seconds())
		if delivered > 0 {
			s += fmt.Sprintf(", %.0f Hz delivered", delivered)
		}
		return s + fmt.Sprintf("), runtime/pprof at %d Hz for goroutines it starts", c.hz)
	}
	s := fmt.Sprintf("sampler: runtime/pprof at %d Hz", c.hz)
	if !c.hzSet {
		if _, m := pprofRate(); m > 0 {
			s += fmt.Sprintf(" (the kernel delivered %.0f Hz when asked for 1000)", m)
		}
	}
	var mis misattributed
	switch {
	case errors.As(c.refused, &mis):
		s += "; the perf sampler (2,000 Hz) is not used: " + mis.Error()
	case c.refused != nil:
		s += "; the perf sampler (2,000 Hz) is unavailable: " + strings.TrimPrefix(c.refused.Error(), "perfevent: ")
		if !strings.Contains(c.refused.Error(), "sysctl") {
			s += "; on Linux, `sysctl kernel.perf_event_paranoid=2` allows it"
		}
	case c.samplerSet:
		s += " (asked for with Sampler)"
	default:
		s += " (" + SamplerEnv + "=pprof)"
	}
	return s
}

// symbolizer turns the program counters of perf samples into profile
// locations, as runtime/pprof does: runtime.CallersFrames, inlined frames
// expanded, one location per program counter.
type symbolizer struct {
	locs  map[uint64]*profile.Location // by pc<<1 | leaf
	funcs map[string]*profile.Function
	nLoc  uint64
}

func newSymbolizer() *symbolizer {
	return &symbolizer{locs: map[uint64]*profile.Location{}, funcs: map[string]*profile.Function{}}
}

// stack returns the locations of a callchain, innermost first.
// Callchain[0] is the interrupted instruction, the others return addresses
// (CallersFrames takes return addresses: the leaf is passed as pc+1). A
// caller the frame-pointer walk missed (perfevent.Sample.LeafRet) is put
// back when the instruction before it calls the leaf's function.
func (y *symbolizer) stack(s *perfevent.Sample, dst []*profile.Location) []*profile.Location {
	dst = dst[:0]
	for i, pc := range s.Callchain {
		dst = append(dst, y.loc(pc, i == 0))
		if i == 0 && s.LeafRet != 0 && (len(s.Callchain) < 2 || s.Callchain[1] != s.LeafRet) && callsFunc(s.LeafRet, pc) {
			dst = append(dst, y.loc(s.LeafRet, false))
		}
	}
	return dst
}

func (y *symbolizer) loc(pc uint64, leaf bool) *profile.Location {
	key := pc << 1
	if leaf {
		key |= 1
	}
	if l := y.locs[key]; l != nil {
		return l
	}
	y.nLoc++
	l := &profile.Location{ID: y.nLoc, Address: pc}
	look := uintptr(pc)
	if leaf {
		look++
	}
	// CallersFrames expands the functions inlined at a program counter
	// only while more program counters follow it: a sentinel (a PC of a
	// function of its own) follows, whose frame ends the list.
	frames := runtime.CallersFrames([]uintptr{look, sentinelPC})
	for {
		fr, more := frames.Next()
		if fr.Entry == sentinelEntry {
			break
		}
		if fr.Function != "" {
			l.Line = append(l.Line, profile.Line{Function: y.fn(fr), Line: int64(fr.Line)})
		}
		if !more {
			break
		}
	}
	y.locs[key] = l
	return l
}

// symbolSentinel is never called: its code ends the program counters given
// to runtime.CallersFrames.
//
//go:noinline
func symbolSentinel() { calibrationSink.Add(1) }

var (
	sentinelEntry = reflect.ValueOf(symbolSentinel).Pointer()
	sentinelPC    = sentinelEntry + 1
)

func (y *symbolizer) fn(fr runtime.Frame) *profile.Function {
	if f := y.funcs[fr.Function]; f != nil {
		return f
	}
	f := &profile.Function{ID: uint64(len(y.funcs) + 1), Name: fr.Function, SystemName: fr.Function, Filename: fr.File}
	y.funcs[fr.Function] = f
	return f
}

// callsFunc reports whether ret is the return address of a call to the
// function holding pc: on amd64 a direct CALL (E8 rel32) to its entry or
// an indirect call through a register, on arm64 a BL to its entry or a
// BLR. It reads the program's own text, which ret points into.
func callsFunc(ret, pc uint64) bool {
	caller := runtime.FuncForPC(uintptr(ret) - 1)
	callee := runtime.FuncForPC(uintptr(pc))
	if caller == nil || callee == nil {
		return false
	}
	entry := uint64(caller.Entry())
	code := func(back uint64) []byte {
		if ret-back < entry {
			return nil
		}
		return codeAt(uintptr(ret-back), int(back))
	}
	switch runtime.GOARCH {
	case "amd64":
		if b := code(5); b != nil && b[0] == 0xE8 {
			rel := int32(binary.LittleEndian.Uint32(b[1:]))
			return uint64(int64(ret)+int64(rel)) == uint64(callee.Entry())
		}
		if b := code(2); b != nil && b[0] == 0xFF && b[1]&0xF8 == 0xD0 { // CALL reg
			return true
		}
		if b := code(3); b != nil && b[0] == 0x41 && b[1] == 0xFF && b[2]&0xF8 == 0xD0 { // CALL r8-r15
			return true
		}
	case "arm64":
		if b := code(4); b != nil {
			ins := binary.LittleEndian.Uint32(b)
			if ins&0xFC000000 == 0x94000000 { // BL imm26
				off := int64(int32(ins<<6)>>6) * 4
				return uint64(int64(ret)-4+off) == uint64(callee.Entry())
			}
			return ins&0xFFFFFC1F == 0xD63F0000 // BLR reg
		}
	}
	return false
}

// codeAt returns n bytes of the program's text at addr, which must lie
// inside a function's code (read only).
func codeAt(addr uintptr, n int) []byte {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}

// perfCapture is the perf side of a capture: the event on the capturing
// thread and the samples read from it, by run. The capturing goroutine
// fills it; the coordinator reads it under session.mu once the runs it
// judges are finished.
type perfCapture struct {
	ev      *perfevent.Event
	sym     *symbolizer
	scratch []*profile.Location
	samples []*profile.Sample
	byRun   map[string]*runSamples
	dropped int64 // samples not under the captured function (the capture loop's own work)
	lost    uint64
	cpu     time.Duration // the thread's CPU time while the event was on
	n       int64         // samples read
}

// openPerf opens the perf event on the calling thread, which must be
// locked to its goroutine.
func openPerf(period time.Duration) (*perfCapture, error) {
	ev, err := perfevent.Open(perfevent.Config{CPU: -1, Period: period, Disabled: true, LeafRet: true, Pages: 128})
	if err != nil {
		return nil, err
	}
	return &perfCapture{ev: ev, sym: newSymbolizer(), byRun: map[string]*runSamples{}}, nil
}

// full reports whether the ring buffer is half full.
func (pc *perfCapture) full() bool {
	n, size := pc.ev.Buffered()
	return n > size/2
}

// drain reads the ring buffer into run label's samples, keeping the frames
// of the captured function (fnName) as splitRound does for runtime/pprof.
func (s *session) drain(label string) error {
	pc := s.perf
	return pc.ev.Read(func(smp *perfevent.Sample) {
		pc.n++
		locs := pc.sym.stack(smp, pc.scratch)
		pc.scratch = locs
		mine, underRun, ok := trimRun(locs, s.fnName)
		if !underRun || !ok || len(mine) == 0 {
			pc.dropped++
			return
		}
		if len(mine) > 1 && leafName(mine) == asyncPreempt {
			mine = mine[1:]
		}
		v := int64(smp.Period)
		sample := &profile.Sample{Location: append([]*profile.Location(nil), mine...),
			Value: []int64{1, v}, Label: map[string][]string{meta.LabelRun: {label}}}
		s.mu.Lock()
		pc.samples = append(pc.samples, sample)
		r := pc.byRun[label]
		if r == nil {
			r = &runSamples{leaves: map[string]int64{}}
			pc.byRun[label] = r
		}
		r.samples++
		r.leaves[ownLeaf(mine)]++
		s.mu.Unlock()
	})
}
