package speedscope

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// Exporter is the "exporter" Write puts in the files it writes.
const Exporter = "hotbudget"

type frameKey struct {
	name, file string
	line, col  int64
}

// funcKey is a function's identity, as analysis.FuncKey.
type funcKey struct {
	name, system, file string
	start              int64
}

type outProfile struct {
	name    string
	stacks  [][]int // root first
	weights []int64
	sum     int64
}

// Write writes p as a speedscope file that speedscope opens.
//
// The time value (the one analysis.Functions uses) becomes the weights, in
// nanoseconds; sample counts are not kept, so one sample of p becomes one
// speedscope sample. Every Line of a Location is a frame, Line[0] the
// innermost. There is one speedscope frame per function (as analysis keys
// functions), so functions keep their self and total time through a round
// trip; the frame's line is the function's start line, else the line where
// the function is first seen, so per-line detail is not kept. A location
// without lines is named as analysis names it. Samples are grouped into one
// sampled profile per distinct "profile" label, else per thread (thread name
// or tid) and process (name or pid) labels; profiles are sorted by name and
// activeProfileIndex is 0. Exact data (see pbuild.IsExact) is written as
// sampled profiles too, since its timeline is gone: reading the file back
// gives the same self and total times, as samples. A profile whose value is
// a count (instructions counted exactly by callgrind or perfassert, objects)
// is written with its counts as weights of unit "none", which speedscope
// shows as numbers (its reader, this package's too, takes "none" for sample
// counts of 1 ms). Write fails on negative values, which speedscope cannot
// hold, and on profiles whose values are neither a time nor a count. p is
// not modified.
func Write(w io.Writer, p *profile.Profile) error {
	ti, _, toNanos, err := pbuild.ValueIndex(p, "")
	unit := "nanoseconds"
	if errors.Is(err, pbuild.ErrNotTime) {
		// Counts (instructions counted exactly, objects) are weights
		// of unit "none", as they are.
		if i, ok := pbuild.CountIndex(p); ok {
			ti, toNanos, unit, err = i, 1, "none", nil
		}
	}
	if err != nil {
		return err
	}
	frames := make(map[funcKey]int)
	locIdx := make(map[*profile.Location][]int) // frame indexes, innermost first
	var frameList []frameKey
	byName := make(map[string]*outProfile)
	var names []string
	for si, s := range p.Sample {
		if ti >= len(s.Value) {
			return fmt.Errorf("sample %d has %d values, want at least %d", si, len(s.Value), ti+1)
		}
		v := s.Value[ti]
		if v < 0 {
			return fmt.Errorf("sample %d: negative value %d: speedscope weights cannot be negative", si, v)
		}
		ns := v * toNanos
		if toNanos != 0 && ns/toNanos != v {
			return fmt.Errorf("sample %d: value %d overflows nanoseconds", si, v)
		}
		name := groupName(s)
		op := byName[name]
		if op == nil {
			op = &outProfile{name: name}
			byName[name] = op
			names = append(names, name)
		}
		var leafFirst []int
		for _, l := range s.Location {
			idx, ok := locIdx[l]
			if !ok {
				for _, f := range locationFrames(l) {
					i, ok := frames[f.fn]
					if !ok {
						i = len(frameList)
						frames[f.fn] = i
						frameList = append(frameList, f.frame)
					}
					idx = append(idx, i)
				}
				locIdx[l] = idx
			}
			leafFirst = append(leafFirst, idx...)
		}
		for i, j := 0, len(leafFirst)-1; i < j; i, j = i+1, j-1 {
			leafFirst[i], leafFirst[j] = leafFirst[j], leafFirst[i]
		}
		op.stacks = append(op.stacks, leafFirst)
		op.weights = append(op.weights, ns)
		if ns > int64(^uint64(0)>>1)-op.sum {
			return fmt.Errorf("sample %d: total time overflows nanoseconds", si)
		}
		op.sum += ns
	}
	sort.Strings(names)
	if len(names) == 0 {
		names = []string{"(empty)"}
		byName[names[0]] = &outProfile{name: names[0]}
	}

	bw := bufio.NewWriter(w)
	bw.WriteString(`{"$schema":`)
	writeString(bw, Schema)
	bw.WriteString(`,"exporter":`)
	writeString(bw, Exporter)
	bw.WriteString(`,"name":`)
	writeString(bw, fileName(p))
	bw.WriteString(`,"activeProfileIndex":0,"shared":{"frames":[`)
	for i, k := range frameList {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString(`{"name":`)
		writeString(bw, k.name)
		if k.file != "" {
			bw.WriteString(`,"file":`)
			writeString(bw, k.file)
		}
		if k.line > 0 {
			bw.WriteString(`,"line":`)
			bw.WriteString(strconv.FormatInt(k.line, 10))
		}
		if k.col > 0 {
			bw.WriteString(`,"col":`)
			bw.WriteString(strconv.FormatInt(k.col, 10))
		}
		bw.WriteByte('}')
	}
	bw.WriteString("]},\"profiles\":[")
	var buf []byte
	for pi, name := range names {
		op := byName[name]
		if pi > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n{\"type\":\"sampled\",\"name\":")
		writeString(bw, name)
		bw.WriteString(`,"unit":`)
		writeString(bw, unit)
		bw.WriteString(`,"startValue":0,"endValue":`)
		bw.WriteString(strconv.FormatInt(op.sum, 10))
		bw.WriteString(`,"samples":[`)
		for i, st := range op.stacks {
			buf = buf[:0]
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '[')
			for j, f := range st {
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = strconv.AppendInt(buf, int64(f), 10)
			}
			buf = append(buf, ']')
			bw.Write(buf)
		}
		bw.WriteString(`],"weights":[`)
		for i, wt := range op.weights {
			buf = buf[:0]
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, wt, 10)
			bw.Write(buf)
		}
		bw.WriteString("]}")
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

type locFrame struct {
	fn    funcKey
	frame frameKey
}

// locationFrames returns the frames of l, innermost first. A function's
// frame carries its start line, else the line where it was first seen.
func locationFrames(l *profile.Location) []locFrame {
	if len(l.Line) == 0 {
		n := pbuild.UnsymbolizedName(l)
		return []locFrame{{fn: funcKey{name: n}, frame: frameKey{name: n}}}
	}
	out := make([]locFrame, 0, len(l.Line))
	for _, ln := range l.Line {
		var f locFrame
		f.frame.line, f.frame.col = ln.Line, ln.Column
		if fn := ln.Function; fn != nil {
			f.fn = funcKey{system: fn.SystemName, file: fn.Filename, start: fn.StartLine}
			if fn.StartLine != 0 {
				f.frame.line = fn.StartLine
			}
		}
		f.fn.name = pbuild.LineName(l, ln)
		f.frame.name, f.frame.file = f.fn.name, f.fn.file
		out = append(out, f)
	}
	return out
}

// groupName names the speedscope profile a sample goes to.
func groupName(s *profile.Sample) string {
	if v := first(s, pbuild.LabelProfile); v != "" {
		return v
	}
	var parts []string
	if v := first(s, pbuild.LabelProcess); v != "" {
		parts = append(parts, v)
	} else if v := first(s, pbuild.LabelPID); v != "" {
		parts = append(parts, "pid "+v)
	}
	if v := first(s, pbuild.LabelThread); v != "" {
		parts = append(parts, v)
	} else if v := first(s, pbuild.LabelTID); v != "" {
		parts = append(parts, "tid "+v)
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, " ")
}

func first(s *profile.Sample, key string) string {
	if v := s.Label[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func fileName(p *profile.Profile) string {
	if f := meta.Format(p.Comments); f != "" {
		return "hotbudget export of a " + f + " profile"
	}
	return "hotbudget export"
}

func writeString(w *bufio.Writer, s string) {
	w.Write(appendString(nil, s))
}

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD, as
// encoding/json does.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
