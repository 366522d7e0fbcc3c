package perfexec

import (
	"fmt"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/binsym"
)

// Profile turns a run's samples into a CPU profile as runtime/pprof
// writes one: sample types samples/count and cpu/nanoseconds, one
// location per address with its inlined frames as lines, named as
// runtime/pprof names them, and a mapping of the executable. Frames below
// runtime.goexit are dropped, as runtime/pprof drops them. bin is the
// symbols of r.Path (Open it once for many runs of one binary).
func Profile(r *Result, bin *binsym.Binary) (*profile.Profile, error) {
	if bin.PIE && r.Mapping.Start == 0 && len(r.Samples) > 0 {
		return nil, fmt.Errorf("perfexec: %s is position independent and its mapping was not seen while it ran: its samples cannot be symbolised", r.Path)
	}
	period := r.Period.Nanoseconds()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "samples", Unit: "count"},
			{Type: "cpu", Unit: "nanoseconds"},
		},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        period,
		TimeNanos:     r.Start.UnixNano(),
		DurationNanos: r.Wall.Nanoseconds(),
	}
	m := &profile.Mapping{ID: 1, File: r.Path, Start: r.Mapping.Start, Limit: r.Mapping.Limit, Offset: r.Mapping.Offset,
		HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true}
	p.Mapping = []*profile.Mapping{m}
	fileAddr := func(a uint64) uint64 { return bin.FileAddr(a, r.Mapping.Start, r.Mapping.Offset) }

	// The stacks as addresses of the instructions: the interrupted one,
	// then each call (a return address minus one).
	stacks := make([][]uint64, 0, len(r.Samples))
	var all []uint64
	for _, s := range r.Samples {
		if len(s.Callchain) == 0 {
			continue
		}
		st := make([]uint64, 0, len(s.Callchain)+1)
		st = append(st, s.Callchain[0])
		if s.LeafRet != 0 && bin.CallsFunc(fileAddr(s.LeafRet), fileAddr(s.Callchain[0])) {
			// The interrupted function had no frame: its caller is
			// missing from the frame-pointer walk.
			st = append(st, s.LeafRet-1)
		}
		for _, ret := range s.Callchain[1:] {
			st = append(st, ret-1)
		}
		for _, a := range st {
			all = append(all, fileAddr(a))
		}
		stacks = append(stacks, st)
	}
	frames, err := bin.Resolve(all)
	if err != nil {
		return nil, err
	}
	locs := map[uint64]*profile.Location{}
	funcs := map[[2]string]*profile.Function{}
	location := func(a uint64) *profile.Location {
		if l, ok := locs[a]; ok {
			return l
		}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Address: a, Mapping: m}
		for _, f := range frames[fileAddr(a)] {
			key := [2]string{f.Symbol, f.File}
			fn := funcs[key]
			if fn == nil {
				// runtime/pprof names functions by their symbol
				// (runtime_FrameSymbolName), generic shapes spelled out.
				fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: f.Symbol, SystemName: f.Symbol, Filename: f.File, StartLine: int64(f.StartLine)}
				funcs[key] = fn
				p.Function = append(p.Function, fn)
			}
			l.Line = append(l.Line, profile.Line{Function: fn, Line: int64(f.Line)})
		}
		locs[a] = l
		p.Location = append(p.Location, l)
		return l
	}
	type key string
	merged := map[key]*profile.Sample{}
	buf := make([]byte, 0, 256)
	for _, st := range stacks {
		var ls []*profile.Location
		for _, a := range st {
			l := location(a)
			if len(l.Line) > 0 && l.Line[len(l.Line)-1].Function.Name == "runtime.goexit" {
				break
			}
			ls = append(ls, l)
		}
		if len(ls) == 0 {
			continue
		}
		buf = buf[:0]
		for _, l := range ls {
			buf = fmt.Appendf(buf, "%x,", l.ID)
		}
		if s, ok := merged[key(buf)]; ok {
			s.Value[0]++
			s.Value[1] += period
			continue
		}
		s := &profile.Sample{Location: ls, Value: []int64{1, period}}
		merged[key(buf)] = s
		p.Sample = append(p.Sample, s)
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("perfexec: the profile of %s: %w", r.Path, err)
	}
	return p, nil
}
