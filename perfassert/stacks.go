package perfassert

import (
	"math"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// Which samples are a capture's: the stacks under its run loop, split by
// capture from the profiler's rounds and trimmed to the captured function.

// splitRound gives each active capture its samples of round profile p,
// trimmed of the frames that belong to perfassert and not to the captured
// function. Samples of no active capture are dropped.
//
// It returns the CPU time all of p's samples stand for, dropped ones
// included: the sum of every sample's time value (the sample type
// analysis.Functions reads), which is that table's Total. ok is false when
// p has no time value or a sample lacks it (Functions fails on those).
func splitRound(p *profile.Profile, active []*session) (sampled time.Duration, ok bool) {
	ti, _, toNanos, err := pbuild.ValueIndex(p, "")
	ok = err == nil
	byID := make(map[string]*session, len(active))
	mine := make(map[string]*profile.Profile, len(active))
	for _, s := range active {
		byID[s.id] = s
		q := &profile.Profile{
			SampleType: p.SampleType, DefaultSampleType: p.DefaultSampleType,
			PeriodType: p.PeriodType, Period: p.Period, TimeNanos: p.TimeNanos,
			Mapping: p.Mapping,
		}
		mine[s.id] = q
		s.ps = append(s.ps, q)
		if s.byRun == nil {
			s.byRun = map[string]*runSamples{}
		}
	}
	for _, smp := range p.Sample {
		if ok {
			if len(smp.Value) > ti {
				sampled += time.Duration(smp.Value[ti] * toNanos)
			} else {
				ok = false
			}
		}
		l := smp.Label[captureLabel]
		if len(l) != 1 {
			continue
		}
		s := byID[l[0]]
		if s == nil {
			continue
		}
		locs, underRun, ok := trimRun(smp.Location, s.fnName)
		if !ok || len(locs) == 0 {
			continue
		}
		if !underRun && systemGoroutine(locs) {
			// A goroutine of the runtime's (a GC mark worker, the
			// sweeper) that the capturing goroutine started, so that it
			// inherited the capture's labels: its work is the
			// collector's, which a capture leaves out. Seen once in 20
			// suites beside two busy loops: its 10ms samples made a perf
			// capture's profile claim runtime/pprof's period.
			continue
		}
		if s.cfg.sampler == samplerPerf && (underRun || !wholeStack(locs)) {
			// With the perf sampler, the capturing goroutine's samples
			// come from its thread's perf event; those of goroutines
			// it started are whole goroutine stacks. A stack cut
			// short (C code, such as the race detector's, under the
			// capture's label) may be the capturing goroutine's.
			continue
		}
		if len(locs) > 1 && leafName(locs) == asyncPreempt {
			// The profiling signal arrived together with a preemption
			// request, whose handler had just pointed the thread at
			// asyncPreempt: the time is the interrupted function's.
			locs = locs[1:]
		}
		labels := make(map[string][]string, len(smp.Label))
		for k, v := range smp.Label {
			if k != captureLabel {
				labels[k] = v
			}
		}
		q := mine[s.id]
		q.Sample = append(q.Sample, &profile.Sample{
			Location: locs, Value: smp.Value, Label: labels,
			NumLabel: smp.NumLabel, NumUnit: smp.NumUnit,
		})
		if run := labels[meta.LabelRun]; len(run) == 1 && len(smp.Value) > 0 {
			r := s.byRun[run[0]]
			if r == nil {
				r = &runSamples{leaves: map[string]int64{}}
				s.byRun[run[0]] = r
			}
			w := smp.Value[0]
			if s.cfg.sampler == samplerPerf && ok && len(smp.Value) > ti {
				// In perf samples: the time this sample stands for.
				w = int64(math.Round(float64(smp.Value[ti]) * float64(toNanos) / float64(perfPeriod)))
			}
			r.samples += w
			r.leaves[ownLeaf(locs)] += w
		}
	}
	if !ok {
		return 0, false
	}
	return sampled, true
}

// Names of perfassert's own code, found at run time so that they follow the
// module path.
// (Set in init: the capture loop refers to them through the functions it
// calls.)
var runName, harnessPkg string

func init() {
	runName = funcName((*session).run)
	harnessPkg = runName[:strings.Index(runName, ".(*session)")+1] // ".../perfassert."
}

func funcName(f any) string {
	if fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer()); fn != nil {
		return fn.Name()
	}
	return ""
}

// trimRun returns the frames of a captured sample that belong to the
// captured function: those leafward of the capture loop (session.run), if
// the frame it called is the function (not the loop's own bookkeeping).
// Samples of goroutines the function started have no loop frame and are
// kept whole; other samples in perfassert's code are dropped (ok false).
// underRun says whether the stack went through the capture loop (the
// capturing goroutine's samples do; those of goroutines the function
// started do not).
func trimRun(locs []*profile.Location, fnName string) (mine []*profile.Location, underRun, ok bool) {
	harness := false
	for i, l := range locs {
		for _, ln := range l.Line {
			if ln.Function == nil {
				continue
			}
			name := ln.Function.Name
			if name == runName {
				if i == 0 || !isFunc(locs[i-1], fnName) {
					return nil, true, false
				}
				return locs[:i], true, true
			}
			if strings.HasPrefix(name, harnessPkg) {
				harness = true
			}
		}
	}
	return locs, false, !harness
}

// wholeStack reports whether a stack is a goroutine's own, not one that
// runtime/pprof cut short because the thread was in code outside Go's
// traceback (runtime._System, runtime._ExternalCode and the like, or the
// race detector's racecall), nor one of the thread's scheduler stack (g0:
// rooted in runtime.mcall, runtime.systemstack, runtime.mstart and the
// like, where the unwinder did not cross back to the goroutine's stack).
// Both carry the labels of the goroutine the thread last ran or is about to
// leave, possibly the capturing one: a goroutine parking (mcall(park_m),
// the pause between runs) was sampled as [runtime.nanotime ...
// runtime.mcall] under the capture's labels, which put a 10ms sample of
// runtime/pprof among the perf sampler's 500µs ones once in CI.
func wholeStack(locs []*profile.Location) bool {
	for _, l := range locs {
		for _, ln := range l.Line {
			if ln.Function == nil {
				continue
			}
			name := ln.Function.Name
			if strings.HasPrefix(name, "runtime._") || name == "racecall" {
				return false
			}
		}
	}
	if len(locs) == 0 {
		return false
	}
	root := rootName(locs)
	return !schedulerRoot[root] && !vdsoRoot[root]
}

// vdsoRoot holds the assembly functions that call the vDSO's clocks on
// Linux. A SIGPROF landing in the vDSO is unwound from the call's return
// address in them, and the traceback stopped there at times: a 10ms
// runtime/pprof sample [time.now] under the capture's labels raised a perf
// capture's period in TestSamplersAgree (once in CI, once in 1 of 3 local
// runs of the package beside other jobs). No goroutine starts in them.
var vdsoRoot = map[string]bool{"time.now": true, "runtime.nanotime1": true, "runtime.walltime": true}

// schedulerRoot holds the functions a stack on a thread's scheduler stack
// (g0) ends in when the traceback stays there.
var schedulerRoot = map[string]bool{
	"runtime.mcall": true, "runtime.systemstack": true, "runtime.morestack": true,
	"runtime.mstart": true, "runtime.mstart0": true, "runtime.mstart1": true,
	"runtime.rt0_go": true,
}

// systemGoroutine reports whether a goroutine's stack starts in the
// runtime (runtime.gcBgMarkWorker, runtime.bgsweep...): the function's own
// goroutines start in functions of their own.
func systemGoroutine(locs []*profile.Location) bool {
	for i := len(locs) - 1; i >= 0; i-- {
		l := locs[i]
		for j := len(l.Line) - 1; j >= 0; j-- {
			f := l.Line[j].Function
			if f == nil || f.Name == "runtime.goexit" {
				continue
			}
			return strings.HasPrefix(f.Name, "runtime.") && !schedulerRoot[f.Name]
		}
	}
	return false
}

// rootName is the outermost function of a stack.
func rootName(locs []*profile.Location) string {
	l := locs[len(locs)-1]
	if len(l.Line) == 0 || l.Line[len(l.Line)-1].Function == nil {
		return ""
	}
	return l.Line[len(l.Line)-1].Function.Name
}

// isFunc reports whether the outermost function of location l is fn (or
// the method a method value's "-fm" wrapper calls).
func isFunc(l *profile.Location, fn string) bool {
	if len(l.Line) == 0 || l.Line[len(l.Line)-1].Function == nil {
		return false
	}
	name := l.Line[len(l.Line)-1].Function.Name
	return name == fn || name == strings.TrimSuffix(fn, "-fm")
}

// ownLeaf is the innermost function of the module under test on a stack
// (the time of the other packages' code it calls is its time), or the
// function the stack ends in when it has none.
func ownLeaf(locs []*profile.Location) string {
	if mod := moduleFuncs(); mod != nil {
		if f := innermostOf(locs, mod); f != "" {
			return f
		}
	}
	return leafName(locs)
}

// innermostOf is the innermost function of a stack that re matches, ""
// when none does.
func innermostOf(locs []*profile.Location, re *regexp.Regexp) string {
	for _, l := range locs {
		for _, ln := range l.Line {
			if ln.Function != nil && re.MatchString(ln.Function.Name) {
				return ln.Function.Name
			}
		}
	}
	return ""
}

// leafName is the function a stack ends in.
func leafName(locs []*profile.Location) string {
	if len(locs) == 0 || len(locs[0].Line) == 0 || locs[0].Line[0].Function == nil {
		return ""
	}
	return locs[0].Line[0].Function.Name
}
