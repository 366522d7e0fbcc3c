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
//
// Functions is built on an Index: the profile turned once into dense
// integer tables (functions, frames, stacks with their distinct functions,
// samples with their label sets), from which a Table under any selection
// is one pass over integer arrays. loaders.LoadIndex reads a file of any
// format into an Index (a Go profile decoded straight into it, without a
// *profile.Profile), and NewIndex indexes a *profile.Profile; build one
// when a profile is asked for several tables.
//
// Heap and allocation profiles (Go's alloc_objects, alloc_space,
// inuse_objects and inuse_space; V8's sampling heap profiles) give bytes or
// objects instead of time, summed the same way, equal to `go tool pprof
// -top -sample_index=...`, and callgrind's profiles count instructions.
// Every value is an int64 in the table's unit, as pprof keeps it:
// Table.Unit says which (nanoseconds for a time), Table.Format writes
// them, and Selection.SampleType picks the value by name or index as
// pprof's -sample_index does.
//
// Which samples count is a Selection (threads, processes, synthetic
// frames, focus and ignore patterns, functions charged to their callers,
// the sample type): the one selection type of the module, which diff,
// perfassert, budget and the command line hold too. Index.Through gives
// the stacks through a set of functions, from which the pooled time of
// several functions is read with each sample counted once.
package analysis

import (
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Function is one row of a Table.
type Function struct {
	Name   string // fully qualified, as pprof prints it: pkg.(*T).Method
	File   string
	Line   int64 // 1-based start line; 0 when unknown
	Column int64 // 1-based; 0 when unknown

	// Self is the value with this function as the leaf frame, Total with
	// it anywhere on the stack, once per sample, both in Table.Unit:
	// nanoseconds (UnitTime), bytes (UnitBytes) or objects, instructions
	// or other events (UnitCount). Table.Format writes one;
	// time.Duration(f.Self) is a time only where the unit is UnitTime.
	Self  int64
	Total int64

	SelfSamples  int64 // samples (or events, for exact data) behind Self
	TotalSamples int64

	// Local is the value (in Table.Unit, as Self) with this function as
	// the leaf frame or as the nearest other function above the leaf: its
	// self time and its direct callees' self time when called from it. A
	// JIT that inlines a callee into it (or stops doing so) moves time
	// between the two without changing Local, so a change of self time
	// that Local does not show is such a move.
	Local        int64
	LocalSamples int64

	SelfShare  float64 // Self / Table.Total, 0..1
	TotalShare float64 // Total / Table.Total, 0..1

	// Key identifies the function inside this table (name, system name,
	// file, start line). It is not stable across builds; diff matches with
	// its own configurable key (diff.Key).
	Key FuncKey
}

// FuncKey identifies a function inside one profile (Function.Key).
type FuncKey struct {
	Name, SystemName, File string
	StartLine              int64
}

// Table holds self and total time per function for one profile.
type Table struct {
	// Total is the value of all selected samples, in Unit: the
	// denominator of shares.
	Total int64
	// TotalSamples is the number of selected samples (events, for exact data).
	TotalSamples int64
	// Exact is true when the values are measured durations, not samples.
	Exact bool
	// Period is the sampling interval of a time profile (0 when unknown,
	// exact, or the values are not times).
	Period time.Duration
	// SampleBytes is, for the bytes and objects of a heap profile, the
	// mean number of bytes allocated between two samples (Go's
	// runtime.MemProfileRate, the profile's period): 1 when every
	// allocation was recorded, 0 when unknown or for a time.
	SampleBytes int64
	// Duration is the time span the profile covers (0 when unknown).
	Duration time.Duration
	// SampleType names the value the table was built from, e.g. "cpu/nanoseconds".
	SampleType string
	// Unit is what Total, the rows' Self, Total and Local and the
	// stacks' Value count: UnitTime (nanoseconds), UnitBytes or UnitCount
	// (objects, for Go's alloc_objects and inuse_objects; instructions
	// and other events counted). Format writes a value in it; the values
	// are int64 in every unit, and times only where Unit is UnitTime.
	Unit string
	// Functions is sorted by Self, then Total (both descending), then Name.
	Functions []Function
	// Warnings are the loader's warnings plus any from this analysis.
	Warnings []string
}

// Units of Table.Unit.
const (
	UnitTime  = pbuild.UnitTime  // nanoseconds: time.Duration(v) is the time
	UnitBytes = pbuild.UnitBytes // bytes allocated or in use
	UnitCount = pbuild.UnitCount // objects, instructions or other events counted
)

// Format writes a value of the table (Total, a row's Self, Total or Local,
// a stack's Value) in its unit as hotbudget prints it everywhere: a time
// as pprof does ("299.04ms"), bytes in binary units ("1.50MiB", "512B"), a
// count as a whole number.
func (t *Table) Format(v int64) string { return textfmt.Value(t.Unit, float64(v)) }

// An Option changes how Functions and an Index's tables and stacks select
// and count samples. A Selection is the one Option: pass none for every
// sample by the profile's default value, or one Selection (of several,
// the last counts). It is an interface so that the common call passes
// nothing: x.Table(), x.Table(analysis.Selection{DropSynthetic: true}).
type Option interface{ apply(*Selection) }

// ErrWrongUnit is wrapped by the error of a computation that needs times
// when the selected sample value is not one (bytes or a count): a time
// limit on a heap profile, say. (ErrNoTime is another refusal: no time at
// all to measure.)
var ErrWrongUnit = pbuild.ErrNotTime

// Functions computes self and total time per function of p. p is not
// modified. To compute several tables of one profile, build its Index once.
func Functions(p *profile.Profile, opts ...Option) (*Table, error) {
	x, err := NewIndex(p)
	if err != nil {
		return nil, err
	}
	return x.Table(opts...)
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
