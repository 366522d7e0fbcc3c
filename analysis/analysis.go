// Package analysis computes self and total time per function from a profile.
//
// Self time of a function is the sum of the values of the samples whose leaf
// frame is that function (pprof's "flat"); total time is the sum of the values
// of the samples that contain the function anywhere in their stack, each
// sample counted once even when the function recurses (pprof's "cum"). These
// are the numbers `go tool pprof -top` prints, and the ones speedscope and the
// Chrome DevTools Performance panel show.
//
// Functions are identified by name, system name, file and start line, so two
// anonymous JavaScript functions in different files stay apart while a Go
// function keeps one row however many call sites and inlined copies it has.
// This is the one deliberate difference from `go tool pprof -top`, which
// merges functions by name alone: where two files define a function of the
// same name (common in JavaScript, rare in Go), pprof prints one row and we
// print two whose self times add up to pprof's. Every inlined frame
// (each Line of a Location) counts as a frame, as in pprof. Locations without
// symbols are named "[binary]" after their mapping, or "<unknown>", as pprof
// names them.
package analysis

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// Function is one row of a Table.
type Function struct {
	Name   string // fully qualified, as pprof prints it: pkg.(*T).Method
	File   string
	Line   int64 // 1-based start line; 0 when unknown
	Column int64 // 1-based; 0 when unknown

	Self  time.Duration // time with this function as the leaf frame
	Total time.Duration // time with this function anywhere on the stack, once per sample

	SelfSamples  int64 // samples (or events, for exact data) behind Self
	TotalSamples int64

	// Local is the time with this function as the leaf frame or the frame
	// directly above the leaf: its self time and its direct callees' self
	// time when called from it. A JIT that inlines a callee into it (or
	// stops doing so) moves time between the two without changing Local,
	// so a change of self time that Local does not show is such a move.
	Local        time.Duration
	LocalSamples int64

	SelfShare  float64 // Self / Table.Total, 0..1
	TotalShare float64 // Total / Table.Total, 0..1

	// Key identifies the function inside this table (name, system name,
	// file, start line). It is not stable across builds; diff matches with
	// its own configurable key.
	Key Key
}

// Key identifies a function inside one profile.
type Key struct {
	Name, SystemName, File string
	StartLine              int64
}

// Table holds self and total time per function for one profile.
type Table struct {
	// Total is the value of all selected samples: the denominator of shares.
	Total time.Duration
	// TotalSamples is the number of selected samples (events, for exact data).
	TotalSamples int64
	// Exact is true when the values are measured durations, not samples.
	Exact bool
	// Period is the sampling interval (0 when unknown or exact).
	Period time.Duration
	// Duration is the time span the profile covers (0 when unknown).
	Duration time.Duration
	// SampleType names the value the table was built from, e.g. "cpu/nanoseconds".
	SampleType string
	// Functions is sorted by Self, then Total (both descending), then Name.
	Functions []Function
	// Warnings are the loader's warnings plus any from this analysis.
	Warnings []string
}

// Synthetic lists the frame names that stand for no code of the program: V8's
// and speedscope's markers for idle time, the engine itself, garbage
// collection and the tree root. DropSynthetic removes samples whose leaf is one
// of them.
var Synthetic = []string{"(idle)", "(program)", "(garbage collector)", "(root)"}

// IsSynthetic reports whether name is one of Synthetic.
func IsSynthetic(name string) bool {
	for _, s := range Synthetic {
		if name == s {
			return true
		}
	}
	return false
}

// An Option changes how Functions selects and counts samples.
type Option interface{ apply(*config) }

type config struct {
	focus, ignore *regexp.Regexp
	dropSynthetic bool
	threads       []string
	processes     []string
	sampleType    string
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Focus keeps only the samples with a frame whose function name matches re,
// as pprof's -focus does. Shares stay relative to all selected samples.
func Focus(re *regexp.Regexp) Option {
	return optionFunc(func(c *config) { c.focus = re })
}

// Ignore drops the samples with a frame whose function name matches re, as
// pprof's -ignore does. Shares stay relative to all selected samples.
func Ignore(re *regexp.Regexp) Option {
	return optionFunc(func(c *config) { c.ignore = re })
}

// DropSynthetic removes the samples whose leaf frame is synthetic (see
// Synthetic), from the rows and from the total: shares become shares of the
// time the program itself ran.
func DropSynthetic() Option {
	return optionFunc(func(c *config) { c.dropSynthetic = true })
}

// Thread keeps only samples of a thread, matched by thread name or tid label.
// Several Thread options select the union.
func Thread(nameOrTID string) Option {
	return optionFunc(func(c *config) { c.threads = append(c.threads, nameOrTID) })
}

// Process keeps only samples of a process, matched by process name or pid label.
// Several Process options select the union.
func Process(nameOrPID string) Option {
	return optionFunc(func(c *config) { c.processes = append(c.processes, nameOrPID) })
}

// SampleType picks the sample value by type name (e.g. "cpu", "wall"). By
// default it is the profile's DefaultSampleType, else its last type, as pprof does.
func SampleType(name string) Option {
	return optionFunc(func(c *config) { c.sampleType = name })
}

// ErrNotTime is returned when the selected value is not a time.
var ErrNotTime = errors.New("sample value is not a time")

// ValueIndex returns the index of the value Functions uses for time and the
// index of the count value (-1 if the profile has none), and the factor that
// turns the time value into nanoseconds.
func ValueIndex(p *profile.Profile, sampleType string) (timeIdx, countIdx int, toNanos int64, err error) {
	if len(p.SampleType) == 0 {
		return 0, -1, 0, errors.New("profile has no sample types")
	}
	timeIdx = len(p.SampleType) - 1
	want := sampleType
	if want == "" {
		want = p.DefaultSampleType
	}
	if want != "" {
		found := false
		for i, st := range p.SampleType {
			if st.Type == want {
				timeIdx, found = i, true
				break
			}
		}
		if !found && sampleType != "" {
			var names []string
			for _, st := range p.SampleType {
				names = append(names, st.Type)
			}
			return 0, -1, 0, fmt.Errorf("no sample type %q (have %s)", sampleType, strings.Join(names, ", "))
		}
	}
	countIdx = -1
	for i, st := range p.SampleType {
		if st.Unit == "count" && i != timeIdx {
			countIdx = i
			break
		}
	}
	st := p.SampleType[timeIdx]
	toNanos = unitNanos(st.Unit)
	if toNanos == 0 {
		// Legacy and address-only profiles may lack units but be CPU time.
		if st.Unit == "" && (st.Type == "cpu" || st.Type == "wall" || st.Type == "time") {
			toNanos = 1
		} else {
			return 0, -1, 0, fmt.Errorf("%w: %s/%s", ErrNotTime, st.Type, st.Unit)
		}
	}
	return timeIdx, countIdx, toNanos, nil
}

func unitNanos(u string) int64 {
	switch strings.ToLower(u) {
	case "nanoseconds", "nanosecond", "ns":
		return 1
	case "microseconds", "microsecond", "us", "µs":
		return 1e3
	case "milliseconds", "millisecond", "ms":
		return 1e6
	case "seconds", "second", "s":
		return 1e9
	}
	return 0
}

// Functions computes self and total time per function of p. p is not modified.
func Functions(p *profile.Profile, opts ...Option) (*Table, error) {
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	ti, ci, toNanos, err := ValueIndex(p, c.sampleType)
	if err != nil {
		return nil, err
	}
	t := &Table{
		Exact:      pbuild.IsExact(p),
		Duration:   time.Duration(p.DurationNanos),
		SampleType: p.SampleType[ti].Type + "/" + p.SampleType[ti].Unit,
		Warnings:   pbuild.Warnings(p),
	}
	if p.PeriodType != nil && !t.Exact {
		if n := unitNanos(p.PeriodType.Unit); n > 0 {
			t.Period = time.Duration(p.Period * n)
		}
	}

	type acc struct {
		row       *Function
		lastCount int // index of the last sample that added to Total
	}
	rows := make(map[Key]*acc)
	var order []*acc
	var frames []frame
	for si, s := range p.Sample {
		if !c.selects(s) {
			continue
		}
		frames = appendFrames(frames[:0], s)
		if c.dropSynthetic {
			if len(frames) > 0 && IsSynthetic(frames[0].key.Name) {
				continue
			}
		}
		if len(s.Value) <= ti {
			return nil, fmt.Errorf("sample %d has %d values, want at least %d", si, len(s.Value), ti+1)
		}
		v := time.Duration(s.Value[ti] * toNanos)
		var n int64
		if ci >= 0 && ci < len(s.Value) {
			n = s.Value[ci]
		}
		t.Total += v
		t.TotalSamples += n
		if !c.keeps(frames) {
			continue
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
			if fi == 0 || fi == 1 && f.key != frames[0].key {
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

type frame struct {
	key          Key
	line, column int64
}

// appendFrames appends the frames of s, leaf first; every inlined Line is a frame.
func appendFrames(dst []frame, s *profile.Sample) []frame {
	for _, l := range s.Location {
		if len(l.Line) == 0 {
			dst = append(dst, frame{key: Key{Name: pbuild.UnsymbolizedName(l)}})
			continue
		}
		for _, ln := range l.Line {
			f := frame{line: ln.Line, column: ln.Column}
			if fn := ln.Function; fn != nil {
				f.key = Key{Name: fn.Name, SystemName: fn.SystemName, File: fn.Filename, StartLine: fn.StartLine}
			}
			if f.key.Name == "" {
				f.key.Name = pbuild.UnsymbolizedName(l)
			}
			dst = append(dst, f)
		}
	}
	return dst
}

// AppendFrameNames appends the function names of s's frames to dst, leaf
// first, one per inlined line, named as Functions names them.
func AppendFrameNames(dst []string, s *profile.Sample) []string {
	for _, l := range s.Location {
		if len(l.Line) == 0 {
			dst = append(dst, pbuild.UnsymbolizedName(l))
			continue
		}
		for _, ln := range l.Line {
			name := ""
			if ln.Function != nil {
				name = ln.Function.Name
			}
			if name == "" {
				name = pbuild.UnsymbolizedName(l)
			}
			dst = append(dst, name)
		}
	}
	return dst
}

func (c *config) selects(s *profile.Sample) bool {
	return pbuild.SelectsThreadProcess(s, c.threads, c.processes)
}

func (c *config) keeps(frames []frame) bool {
	if c.focus != nil {
		found := false
		for _, f := range frames {
			if c.focus.MatchString(f.key.Name) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if c.ignore != nil {
		for _, f := range frames {
			if c.ignore.MatchString(f.key.Name) {
				return false
			}
		}
	}
	return true
}

// Find returns the rows whose Name is exactly name (several when functions of
// the same name live in different files).
func (t *Table) Find(name string) []Function {
	var out []Function
	for _, f := range t.Functions {
		if f.Name == name {
			out = append(out, f)
		}
	}
	return out
}

// Match returns the rows whose Name matches re.
func (t *Table) Match(re *regexp.Regexp) []Function {
	var out []Function
	for _, f := range t.Functions {
		if re.MatchString(f.Name) {
			out = append(out, f)
		}
	}
	return out
}
