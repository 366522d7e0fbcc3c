package analysis

// The implementation of Functions before the index (commit 2fa585e), kept
// as the reference the index-based one must equal on every input.

import (
	"fmt"
	"sort"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/index"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

func referenceFunctions(p *profile.Profile, opts ...Option) (*Table, error) {
	var c Selection
	for _, o := range opts {
		o.apply(&c)
	}
	types := make([]pbuild.ValueType, len(p.SampleType))
	for i, st := range p.SampleType {
		types[i] = pbuild.ValueType{Type: st.Type, Unit: st.Unit}
	}
	var periodUnit string
	if p.PeriodType != nil {
		periodUnit = p.PeriodType.Unit
	}
	val, err := pbuild.SelectValue(types, p.DefaultSampleType, c.SampleType, periodUnit, p.Period)
	if err != nil {
		return nil, err
	}
	ti, toNanos := val.Idx, val.Scale
	t := &Table{
		Exact:      pbuild.IsExact(p),
		Duration:   time.Duration(p.DurationNanos),
		SampleType: p.SampleType[ti].Type + "/" + p.SampleType[ti].Unit,
		Unit:       val.Unit,
		Warnings:   pbuild.Warnings(p),
	}
	if p.PeriodType != nil && val.Unit != UnitTime && p.PeriodType.Unit == "bytes" && p.Period > 0 {
		t.SampleBytes = p.Period
	}
	if p.PeriodType != nil && !t.Exact && val.Unit == UnitTime {
		if n := pbuild.UnitNanos(p.PeriodType.Unit); n > 0 {
			t.Period = time.Duration(p.Period * n)
		}
	}

	type acc struct {
		row       *Function
		lastCount int // index of the last sample that added to Total
	}
	rows := make(map[FuncKey]*acc)
	var order []*acc
	var frames []refFrame
	for si, s := range p.Sample {
		if !c.refSelects(s) {
			continue
		}
		frames = refAppendFrames(frames[:0], s)
		if c.DropSynthetic {
			if len(frames) > 0 && index.IsSynthetic(frames[0].key.Name) {
				continue
			}
		}
		if len(s.Value) <= ti {
			return nil, fmt.Errorf("sample %d has %d values, want at least %d", si, len(s.Value), ti+1)
		}
		v := s.Value[ti] * toNanos
		n := val.Count(s.Value)
		t.Total += v
		t.TotalSamples += n
		if !c.refKeeps(frames) {
			continue
		}
		// Local: the leaf, and the nearest function above it that is not
		// the leaf's.
		up := -1
		for fi := 1; fi < len(frames); fi++ {
			if frames[fi].key != frames[0].key {
				up = fi
				break
			}
		}
		for fi, f := range frames {
			a, ok := rows[f.key]
			if !ok {
				a = &acc{row: &Function{Name: f.key.Name, File: f.key.File, Line: f.key.StartLine, Column: f.column, Key: f.key}, lastCount: -1}
				if a.row.Line == 0 {
					a.row.Line = f.line
				}
				rows[f.key] = a
				order = append(order, a)
			}
			if fi == 0 {
				a.row.Self += v
				a.row.SelfSamples += n
			}
			if fi == 0 || fi == up && frames[up].key != frames[0].key && firstOf(frames, fi) {
				a.row.Local += v
				a.row.LocalSamples += n
			}
			if a.lastCount != si {
				a.lastCount = si
				a.row.Total += v
				a.row.TotalSamples += n
			}
		}
	}
	t.Functions = make([]Function, 0, len(order))
	for _, a := range order {
		r := *a.row
		if t.Total != 0 {
			r.SelfShare = float64(r.Self) / float64(t.Total)
			r.TotalShare = float64(r.Total) / float64(t.Total)
		}
		t.Functions = append(t.Functions, r)
	}
	sort.SliceStable(t.Functions, func(i, j int) bool {
		a, b := &t.Functions[i], &t.Functions[j]
		if a.Self != b.Self {
			return a.Self > b.Self
		}
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.File < b.File
	})
	return t, nil
}

type refFrame struct {
	key          FuncKey
	line, column int64
}

// appendFrames appends the frames of s, leaf first; every inlined Line is a frame.
func refAppendFrames(dst []refFrame, s *profile.Sample) []refFrame {
	for _, l := range s.Location {
		if len(l.Line) == 0 {
			dst = append(dst, refFrame{key: FuncKey{Name: pbuild.UnsymbolizedName(l)}})
			continue
		}
		for _, ln := range l.Line {
			f := refFrame{line: ln.Line, column: ln.Column}
			if fn := ln.Function; fn != nil {
				f.key = FuncKey{Name: fn.Name, SystemName: fn.SystemName, File: fn.Filename, StartLine: fn.StartLine}
			}
			if f.key.Name == "" {
				f.key.Name = pbuild.UnsymbolizedName(l)
			}
			dst = append(dst, f)
		}
	}
	return dst
}

func (c *Selection) refSelects(s *profile.Sample) bool {
	return pbuild.SelectsThreadProcess(s, c.Threads, c.Processes)
}

func (c *Selection) refKeeps(frames []refFrame) bool {
	if c.Focus != nil {
		found := false
		for _, f := range frames {
			if c.Focus.MatchString(f.key.Name) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if c.Ignore != nil {
		for _, f := range frames {
			if c.Ignore.MatchString(f.key.Name) {
				return false
			}
		}
	}
	return true
}

// firstOf reports whether frames[fi] is the first frame of its function.
func firstOf(frames []refFrame, fi int) bool {
	for i := 0; i < fi; i++ {
		if frames[i].key == frames[fi].key {
			return false
		}
	}
	return true
}
