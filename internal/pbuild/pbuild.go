// Package pbuild builds *profile.Profile values for the loaders.
//
// Every loader turns its format into frames and stacks and hands them to a
// Builder, which interns functions and locations, merges identical stacks,
// records warnings and validates the result. Keeping that in one place means
// every format produces the same shape of profile:
//
//   - Sample values are [count, time in nanoseconds]. Sampled data uses the
//     types samples/count and cpu/nanoseconds; exact data (duration events,
//     regions) uses events/count and wall/nanoseconds and is marked exact
//     in its comments (meta.MarkExact).
//   - Stacks are leaf first, as in pprof.
//   - Warnings are kept as profile comments (meta.AppendWarning) so they
//     survive a round trip through a pprof file.
//   - Who ran the code is kept as string labels (LabelPID, LabelTID, ...).
package pbuild

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"unsafe"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// Label keys set on samples by the loaders.
const (
	LabelPID     = "pid"     // process id, as a string
	LabelTID     = "tid"     // thread id, as a string
	LabelProcess = "process" // process name from metadata
	LabelThread  = "thread"  // thread name from metadata
	LabelProfile = "profile" // profile name or id inside a file that holds several
	LabelSeq     = "seq"     // sequence number from Node's file name
	LabelGoID    = "goroutine"
)

// MaxWarnings bounds how many distinct warnings a profile keeps; the rest are counted.
const MaxWarnings = 50

// Kind says whether a profile's values are sampled or exact.
type Kind int

const (
	// Sampled values come from periodic samples (pprof, V8, speedscope sampled).
	Sampled Kind = iota
	// Exact values are measured durations (trace duration events, regions).
	Exact
)

// Frame is one function activation as a loader sees it.
// Lines and columns are 1-based; 0 means unknown.
type Frame struct {
	Name       string
	SystemName string // identity beyond Name (V8: scriptId, url, line, column); defaults to Name
	File       string
	StartLine  int64 // line where the function starts
	Line       int64 // line executing in this frame
	Column     int64
}

// Builder accumulates samples into a profile. The zero value is not usable; call New.
type Builder struct {
	p        *profile.Profile
	kind     Kind
	funcs    map[funcKey]*profile.Function
	locs     map[Frame]*profile.Location
	samples  map[string]*profile.Sample
	labelIDs map[*map[string][]string]int
	keyBuf   []byte
	warnings []string
	warnSeen map[string]int
	dropped  int
	err      error // the first value Add could not take, returned by Finish
	meter    *membudget.Meter
	prepaid  bool // locations and functions are charged by the caller
}

// SetMeter makes b charge m for the locations, functions and samples it
// creates (nil: none). The loader's reader checks m as input arrives, and
// Finish refuses the profile if m's budget was exceeded.
func (b *Builder) SetMeter(m *membudget.Meter) { b.meter = m }

// PrepaidLocations tells b that its caller charged the meter, as it read
// the input, for every location and function b will create (V8's nodes,
// one location each): b charges only for samples.
func (b *Builder) PrepaidLocations() { b.prepaid = true }

// Err returns the error of the meter's exceeded budget, or nil. Once it is
// set, Add adds nothing: the caller stops, and Finish returns the error.
func (b *Builder) Err() error {
	if b.meter == nil {
		return nil
	}
	return b.meter.Err()
}

// Charges of the Builder's structures: a location with its line and its
// key in the map of locations; a function, its key and its strings; a
// sample, its key and its values, besides 8 bytes per location of its stack.
const (
	costLocation = membudget.CostLocation + membudget.CostLine + 120
	costFunction = membudget.CostFunction + 80
	costSample   = membudget.CostSample + membudget.CostString + 2*membudget.CostValue
)

type funcKey struct {
	name, system, file string
	start              int64
}

// New returns a Builder for a profile of the given kind.
func New(kind Kind) *Builder {
	p := &profile.Profile{}
	if kind == Exact {
		p.SampleType = []*profile.ValueType{{Type: "events", Unit: "count"}, {Type: "wall", Unit: "nanoseconds"}}
		p.PeriodType = &profile.ValueType{Type: "wall", Unit: "nanoseconds"}
		p.Comments = meta.MarkExact(p.Comments)
	} else {
		p.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
		p.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
	}
	return &Builder{
		p:        p,
		kind:     kind,
		funcs:    make(map[funcKey]*profile.Function),
		locs:     make(map[Frame]*profile.Location),
		samples:  make(map[string]*profile.Sample),
		labelIDs: make(map[*map[string][]string]int),
		warnSeen: make(map[string]int),
	}
}

// Kind reports the kind the builder was created with.
func (b *Builder) Kind() Kind { return b.kind }

// Location returns the location for f, creating it and its function on first use.
func (b *Builder) Location(f Frame) *profile.Location {
	if l, ok := b.locs[f]; ok {
		return l
	}
	sys := f.SystemName
	if sys == "" {
		sys = f.Name
	}
	fk := funcKey{f.Name, sys, f.File, f.StartLine}
	fn, ok := b.funcs[fk]
	if !ok {
		fn = &profile.Function{
			ID:         uint64(len(b.p.Function) + 1),
			Name:       f.Name,
			SystemName: sys,
			Filename:   f.File,
			StartLine:  f.StartLine,
		}
		b.funcs[fk] = fn
		b.p.Function = append(b.p.Function, fn)
		if b.meter != nil && !b.prepaid {
			b.meter.Add(membudget.Function, 1, costFunction+2*int64(len(f.Name)+len(sys)+len(f.File)))
		}
	}
	if b.meter != nil && !b.prepaid {
		b.meter.Add(membudget.Location, 1, costLocation)
	}
	l := &profile.Location{
		ID:   uint64(len(b.p.Location) + 1),
		Line: []profile.Line{{Function: fn, Line: f.Line, Column: f.Column}},
	}
	b.locs[f] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

// Labels is a label set shared by many samples. Create one with NewLabels and
// reuse the pointer: samples with the same pointer and stack are merged.
type Labels = *map[string][]string

// NewLabels returns a shared label set from key/value pairs; empty values are skipped.
func NewLabels(kv ...string) Labels {
	m := make(map[string][]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			m[kv[i]] = []string{kv[i+1]}
		}
	}
	return &m
}

// Add records count events taking nanos nanoseconds with the given stack
// (leaf first) and labels (nil for none). Identical stacks with the same
// label pointer are merged into one sample. A negative count or time, or
// a merged sample whose values overflow int64, is an error that Finish
// returns (ValueSums' rule, which the loaders apply to the whole profile).
func (b *Builder) Add(stack []*profile.Location, count, nanos int64, labels Labels) {
	if b.err != nil || b.meter != nil && b.meter.Err() != nil {
		return
	}
	if count < 0 || nanos < 0 {
		b.err = fmt.Errorf("sample %d: negative count %d or time %dns", len(b.p.Sample), count, nanos)
		return
	}
	lid, ok := b.labelIDs[labels]
	if !ok {
		lid = len(b.labelIDs)
		b.labelIDs[labels] = lid
	}
	key := b.keyBuf[:0]
	key = appendUvarint(key, uint64(lid))
	for _, l := range stack {
		key = appendUvarint(key, l.ID)
	}
	b.keyBuf = key
	if s, ok := b.samples[unsafe.String(unsafe.SliceData(key), len(key))]; ok {
		c, okc := CheckedAdd(s.Value[0], count)
		n, okn := CheckedAdd(s.Value[1], nanos)
		if !okc || !okn {
			b.err = fmt.Errorf("the samples of one stack add up to more than int64 holds (%d + %d events, %d + %d ns): they would overflow", s.Value[0], count, s.Value[1], nanos)
			return
		}
		s.Value[0], s.Value[1] = c, n
		return
	}
	s := &profile.Sample{
		Location: append([]*profile.Location(nil), stack...),
		Value:    []int64{count, nanos},
	}
	if labels != nil && len(*labels) > 0 {
		s.Label = *labels
	}
	b.samples[string(key)] = s
	b.p.Sample = append(b.p.Sample, s)
	if b.meter != nil {
		b.meter.Add(membudget.Sample, 1, costSample+int64(len(key))+16*int64(len(stack)))
	}
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// Warnf records a warning. Identical messages are counted, not repeated.
func (b *Builder) Warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if i, ok := b.warnSeen[msg]; ok {
		if i >= 0 {
			b.warnSeen[msg] = i + 1
		}
		return
	}
	if len(b.warnings) >= MaxWarnings {
		b.dropped++
		b.warnSeen[msg] = -1
		return
	}
	b.warnSeen[msg] = 1
	b.warnings = append(b.warnings, msg)
}

// Warnings returns the warnings recorded so far.
func (b *Builder) Warnings() []string { return append([]string(nil), b.warnings...) }

// NumSamples is the number of distinct samples so far.
func (b *Builder) NumSamples() int { return len(b.p.Sample) }

// Profile gives access to the profile under construction, for setters such
// as TimeNanos. Callers must not add samples, locations or functions directly.
func (b *Builder) Profile() *profile.Profile { return b.p }

// Finish sets the period and duration, stores warnings and the format name as
// comments, validates the profile and returns it. The Builder must not be
// used afterwards.
func (b *Builder) Finish(format string, period, durationNanos int64) (*profile.Profile, error) {
	p := b.p
	p.Period = period
	if durationNanos < 0 {
		durationNanos = 0
	}
	p.DurationNanos = durationNanos
	if format != "" {
		p.Comments = meta.AppendFormat(p.Comments, format)
	}
	for _, w := range b.warnings {
		if n := b.warnSeen[w]; n > 1 {
			w = fmt.Sprintf("%s (%d times)", w, n)
		}
		p.Comments = meta.AppendWarning(p.Comments, w)
	}
	if b.dropped > 0 {
		p.Comments = meta.AppendWarning(p.Comments, fmt.Sprintf("%d more distinct warnings not shown", b.dropped))
	}
	b.samples, b.locs, b.funcs, b.labelIDs = nil, nil, nil, nil
	if b.err != nil {
		return nil, b.err
	}
	if b.meter != nil {
		if err := b.meter.Err(); err != nil {
			return nil, err
		}
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("internal error: built profile is invalid: %w", err)
	}
	return p, nil
}

// Warnings returns the warnings stored in p's comments by a loader.
func Warnings(p *profile.Profile) []string { return meta.Warnings(p.Comments) }

// IsExact reports whether p holds exact durations rather than samples.
func IsExact(p *profile.Profile) bool { return meta.IsExact(p.Comments) }

// MedianDelta returns the median of the positive differences between
// consecutive values of ts (which need not be sorted); 0 if there are none.
// Loaders use it for Period, the typical sampling interval.
func MedianDelta(ts []int64) int64 {
	if len(ts) < 2 {
		return 0
	}
	s := append([]int64(nil), ts...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	d := make([]int64, 0, len(s)-1)
	for i := 1; i < len(s); i++ {
		if x := s[i] - s[i-1]; x > 0 {
			d = append(d, x)
		}
	}
	return Median(d)
}

// Median returns the upper median of v, the value at index len(v)/2 in
// sorted order: always one of the values, as a period must be; 0 for an
// empty v. v is not modified. (Float medians: internal/stats.Median.)
func Median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// Options are what the public loaders package passes to a format parser.
type Options struct {
	// Name is the file path or another name for the input; parsers use it
	// for metadata found in file names (Node's CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile).
	// Errors need not repeat it: the caller adds it.
	Name string
	// View selects what a Chrome trace contributes when it has both CPU
	// samples and duration events: ViewSamples, ViewDurations or "" (default).
	View string
	// Meter, when not nil, is charged for what the parser builds (see
	// Builder.SetMeter); the caller feeds it the input read and stops the
	// read when its budget is exceeded.
	Meter *membudget.Meter
}

// Views of a trace that has both CPU samples and duration events.
const (
	ViewSamples   = "samples"
	ViewDurations = "durations"
)

// UnsymbolizedName names a location without function information the way
// `go tool pprof -top` does at function granularity: by its binary, or
// <unknown> when even that is missing. A nil location is <unknown>.
func UnsymbolizedName(l *profile.Location) string {
	if l == nil || l.Mapping == nil {
		return UnsymbolizedMappingName("")
	}
	return UnsymbolizedMappingName(l.Mapping.File)
}

// LineName names the function of line ln of location l as analysis
// names it: its function's name, or UnsymbolizedName(l) when it has none.
func LineName(l *profile.Location, ln profile.Line) string {
	if ln.Function != nil && ln.Function.Name != "" {
		return ln.Function.Name
	}
	return UnsymbolizedName(l)
}

// FrameNames appends the function names of s's frames to dst as analysis
// counts frames: leaf first, one per line of a location (the inlined
// callee first), one for a location without lines.
func FrameNames(dst []string, s *profile.Sample) []string {
	for _, l := range s.Location {
		if l == nil || len(l.Line) == 0 {
			dst = append(dst, UnsymbolizedName(l))
			continue
		}
		for _, ln := range l.Line {
			dst = append(dst, LineName(l, ln))
		}
	}
	return dst
}

// UnsymbolizedMappingName is UnsymbolizedName for a location whose mapping
// has the given file name ("" for none): the one place the rule is written.
func UnsymbolizedMappingName(file string) string {
	if file != "" {
		return "[" + filepath.Base(file) + "]"
	}
	return "<unknown>"
}

// SelectsThreadProcess reports whether sample s belongs to one of threads
// (by thread name or tid) and one of processes (by process name or pid); an
// empty list selects everything.
func SelectsThreadProcess(s *profile.Sample, threads, processes []string) bool {
	return SelectsLabels(func(k string) []string { return s.Label[k] }, threads, processes)
}

// SelectsLabels is SelectsThreadProcess for a sample whose string labels
// label returns by key.
func SelectsLabels(label func(key string) []string, threads, processes []string) bool {
	if len(threads) > 0 && !matchLabel(label, threads, LabelThread, LabelTID) {
		return false
	}
	if len(processes) > 0 && !matchLabel(label, processes, LabelProcess, LabelPID) {
		return false
	}
	return true
}

func matchLabel(label func(string) []string, want []string, keys ...string) bool {
	for _, k := range keys {
		for _, v := range label(k) {
			for _, w := range want {
				if v == w {
					return true
				}
			}
		}
	}
	return false
}
