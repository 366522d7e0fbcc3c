// Package v8 reads V8 CPU profiles (.cpuprofile, as written by node --cpu-prof,
// Chrome DevTools and the Chrome DevTools Protocol's Profiler.stop) and turns
// them into samples. The Chrome trace loader reuses Build for profiles
// streamed as Profile/ProfileChunk events.
package v8

// CallFrame is a V8 call frame. LineNumber and ColumnNumber are 0-based, -1 when unknown.
type CallFrame struct {
	FunctionName string
	ScriptID     string // numbers in some files, strings in others: kept as text
	URL          string
	LineNumber   int64
	ColumnNumber int64
}

// Node is one node of the V8 call tree.
type Node struct {
	ID        int64
	Parent    int64 // 0 when not given
	HasParent bool
	Children  []int64
	CallFrame CallFrame
	HitCount  int64
}

// Profile is a V8 CPU profile in the modern layout. Times are microseconds.
type Profile struct {
	Nodes      []Node
	StartTime  int64
	EndTime    int64
	Samples    []int64 // node ids
	TimeDeltas []int64 // µs; Samples[i] happened at StartTime + sum(TimeDeltas[:i+1])
	// Timestamps holds absolute sample times (µs) instead of TimeDeltas, as
	// the legacy layout does; Build uses it only when TimeDeltas is nil.
	// Its length is len(Samples), or len(Samples)+1 when the last entry
	// ends the last sample (as DevTools reads it).
	Timestamps []int64
}

// Span is what Build reports about the time a profile covers.
type Span struct {
	Start, End int64 // µs, absolute, as in the profile
	Samples    int   // samples added
	Period     int64 // median interval between samples, ns (0 if unknown)
	// Nanos is the time the samples cover, ns: the sum of their durations
	// (End-Start in µs may round it down).
	Nanos int64
}
