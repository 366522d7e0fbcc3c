// Package history keeps the results of hotbudget record across the commits
// of a branch and finds where they changed: one small JSON record per
// commit (Record), stored as a git note (Notes), pruned to a size bound
// (Prune), read back as a series per benchmark and measure (Build), with
// change points found by E-divisive means for measured time and by steps
// for exact counts (Analyze), and written as text, Markdown or a
// self-contained HTML page.
//
// The format is documented in docs/history.md; a record is plain JSON that
// git notes --ref=hotbudget show COMMIT prints without hotbudget.
package history

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/hotbudget/hotbudget/internal/stats"
)

// Schema names the version of a record's JSON.
const Schema = "hotbudget.history/v1"

// Instruments: what measured a record's values.
const (
	// InstrumentTime is CPU profiles and go test's wall-clock ns/op: noisy,
	// judged by E-divisive means.
	InstrumentTime = "time"
	// InstrumentInstructions is callgrind's counts (record
	// --instructions): exact, judged by steps.
	InstrumentInstructions = "instructions"
)

// Record is what one commit's record measured at its head.
type Record struct {
	Schema string `json:"schema"`
	// Commit is the full hash of the commit measured.
	Commit string `json:"commit"`
	// Date is the commit's committer date (RFC 3339).
	Date string `json:"date,omitempty"`
	// Recorded is when the record was appended (RFC 3339).
	Recorded string `json:"recorded,omitempty"`
	// Instrument is InstrumentTime or InstrumentInstructions.
	Instrument string `json:"instrument"`
	// Go is the Go version of the benchmarks' binaries ("go1.26.8").
	Go string `json:"go,omitempty"`
	// Machine is the kind of machine: platform and CPU model as go test
	// printed it ("linux/amd64; Intel(R) Xeon(R) ...").
	Machine string `json:"machine,omitempty"`
	// GOMAXPROCS is the benchmarks' (their names' -N suffix) and CPUs the
	// machine's processors where history append ran (time records that
	// keep TimeRuns: the rest of the machine's kind).
	GOMAXPROCS int `json:"gomaxprocs,omitempty"`
	CPUs       int `json:"cpus,omitempty"`
	// CountsOf are the modules whose functions the benchmarks' Counts
	// hold (instructions; go list -m where history append ran): what
	// record's gate judges by default. Absent: every function's.
	CountsOf []string `json:"counts_of,omitempty"`
	// Benchmarks are sorted by name.
	Benchmarks []Benchmark `json:"benchmarks"`
}

// Benchmark is one benchmark's values at a commit. A measure the record
// did not take is absent (nil).
type Benchmark struct {
	// Name is the package and the benchmark as go test prints it without
	// the GOMAXPROCS suffix: "example.com/m/kv BenchmarkParse/small".
	Name string `json:"name"`
	// Runs is how many runs the values summarise.
	Runs int `json:"runs,omitempty"`
	// NsPerOp is the wall-clock time per op over the runs (time).
	NsPerOp *Spread `json:"ns_op,omitempty"`
	// InstrPerOp is the instructions per op (instructions).
	InstrPerOp *float64 `json:"instr_op,omitempty"`
	// BytesPerOp and AllocsPerOp are go test -benchmem's, median over runs.
	BytesPerOp  *float64 `json:"b_op,omitempty"`
	AllocsPerOp *float64 `json:"allocs_op,omitempty"`
	// Functions are the functions holding the most self time (or
	// instructions), compacted (Compact); pruned from old records (Prune).
	Functions []Function `json:"functions,omitempty"`
	// Ops is N, the iterations whose instructions Counts and InstrPerOp
	// hold: the difference of callgrind's runs of 2N and N ops
	// (instructions).
	Ops int64 `json:"ops,omitempty"`
	// Counts are the self instructions in those Ops iterations of every
	// function of the modules CountsOf names (of every function when it is
	// absent), exact and uncompacted (a function absent executed none),
	// sorted by name: what record --base-from-history judges a pull
	// request's counts against, as it would the base's measured again.
	// Pruned with Functions.
	Counts []Count `json:"counts,omitempty"`
	// CountTotal is the whole count of the Ops iterations, every
	// function's.
	CountTotal int64 `json:"count_total,omitempty"`
	// TimeRuns are the runs of a time record as the time verdict reads
	// them: what record --base-from-history rebuilds a measured base
	// from. Pruned with Functions.
	TimeRuns *TimeRuns `json:"time_runs,omitempty"`
}

// TimeRuns are a benchmark's runs (time): each run's CPU profile reduced
// to what diff's verdict of the functions' self time reads, and its
// benchmark results, what benchstat's verdict reads.
//
// A profile is kept as its samples' leaf functions, each with the nearest
// other function above it (its caller): each function's self value and
// samples, its local value (self and its direct callees' self under it,
// which the verdict checks a change of self time against) and the run's
// total are those of the profile, with runtime.asyncPreempt charged to its
// caller (diff's default selection). Total time (the whole stack) is not
// kept.
type TimeRuns struct {
	// SampleTypes are the profiles' sample types as "type/unit"
	// ("samples/count", "cpu/nanoseconds"), the default one last but
	// named by DefaultSampleType.
	SampleTypes       []string `json:"sample_types"`
	DefaultSampleType string   `json:"default_sample_type,omitempty"`
	// PeriodType ("cpu/nanoseconds") and Period are the profiles'.
	PeriodType string `json:"period_type,omitempty"`
	Period     int64  `json:"period,omitempty"`
	// Scaled says each group of Samples keeps its first value (the
	// samples) alone: every other value is it times Period (perf events'
	// and runtime/pprof's CPU time).
	Scaled bool `json:"scaled,omitempty"`
	// Functions are the names Samples index.
	Functions []string `json:"functions"`
	// Runs are in the order record ran them.
	Runs []TimeRun `json:"runs"`
}

// TimeRun is one run of a benchmark.
type TimeRun struct {
	// Ops is the iterations the run did.
	Ops int64 `json:"ops"`
	// Samples are the run's samples grouped by leaf and caller, flat:
	// leaf, caller (indexes of TimeRuns.Functions; -1: none), then a
	// value per sample type (one when Scaled), for each group.
	Samples []int64 `json:"samples"`
	// Results are the run's benchmark result lines as go test printed
	// them (one per -test.count), spaces collapsed.
	Results []string `json:"results"`
}

// Count is one function's self count in a benchmark's Ops iterations.
type Count struct {
	Name string `json:"name"`
	N    int64  `json:"n"`
}

// Spread is a value measured in several runs: the median and the range.
type Spread struct {
	Median float64 `json:"med"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Function is one function's self value in a benchmark.
type Function struct {
	Name string `json:"name"`
	// Share is the function's self share of the benchmark's profile
	// (median over runs), 0 to 1.
	Share float64 `json:"share"`
	// PerOp is its self value per op in the instrument's unit: ns (CPU
	// time) or instructions.
	PerOp float64 `json:"per_op"`
}

// SpreadOf summarises values (at least one).
func SpreadOf(values []float64) *Spread {
	if len(values) == 0 {
		return nil
	}
	return &Spread{Median: stats.Median(values), Min: minOf(values), Max: maxOf(values)}
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = math.Max(m, x)
	}
	return m
}

// Compaction is how much per-function detail a record keeps.
type Compaction struct {
	// MinShare drops functions whose self share is below it.
	MinShare float64
	// MaxFunctions keeps at most this many functions a benchmark, the
	// largest shares first (0: no limit).
	MaxFunctions int
}

// DefaultCompaction keeps the functions holding at least 1% of a
// benchmark, at most 20 of them.
var DefaultCompaction = Compaction{MinShare: 0.01, MaxFunctions: 20}

// Compact keeps the functions c allows, largest share first, sorts the
// benchmarks by name and rounds values to what they can tell: a
// benchmark's time to 4 significant digits and a function's to 3 (runs vary
// by more), counts (instructions, bytes, allocations) to 7 (a step of 0.5%
// stays visible), shares to 4 decimals.
func (r *Record) Compact(c Compaction) {
	digits := 3
	if r.Instrument == InstrumentInstructions {
		digits = 7
	}
	sort.Slice(r.Benchmarks, func(i, j int) bool { return r.Benchmarks[i].Name < r.Benchmarks[j].Name })
	for i := range r.Benchmarks {
		b := &r.Benchmarks[i]
		if b.NsPerOp != nil {
			b.NsPerOp.Median, b.NsPerOp.Min, b.NsPerOp.Max = Round(b.NsPerOp.Median, 4), Round(b.NsPerOp.Min, 4), Round(b.NsPerOp.Max, 4)
		}
		for _, p := range []*float64{b.InstrPerOp, b.BytesPerOp, b.AllocsPerOp} {
			if p != nil {
				*p = Round(*p, 7)
			}
		}
		fs := b.Functions[:0]
		for _, f := range b.Functions {
			if f.Share >= c.MinShare {
				f.Share = math.Round(f.Share*1e4) / 1e4
				f.PerOp = Round(f.PerOp, digits)
				fs = append(fs, f)
			}
		}
		sort.SliceStable(fs, func(i, j int) bool {
			if fs[i].Share != fs[j].Share {
				return fs[i].Share > fs[j].Share
			}
			return fs[i].Name < fs[j].Name
		})
		if c.MaxFunctions > 0 && len(fs) > c.MaxFunctions {
			fs = fs[:c.MaxFunctions]
		}
		if len(fs) == 0 {
			fs = nil
		}
		b.Functions = fs
	}
}

// Round rounds v to digits significant digits.
func Round(v float64, digits int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', digits, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// Prune drops the per-function detail (functions, counts and runs) of
// every benchmark of a record; it reports whether there was any.
func (r *Record) Prune() bool {
	pruned := false
	for i := range r.Benchmarks {
		b := &r.Benchmarks[i]
		if b.Functions != nil || b.Counts != nil || b.TimeRuns != nil {
			b.Functions, b.Counts, b.CountTotal, b.TimeRuns = nil, nil, 0, nil
			pruned = true
		}
	}
	return pruned
}

// PruneRuns drops the runs (TimeRuns) of every benchmark of a record; it
// reports whether there were any.
func (r *Record) PruneRuns() bool {
	pruned := false
	for i := range r.Benchmarks {
		if r.Benchmarks[i].TimeRuns != nil {
			r.Benchmarks[i].TimeRuns = nil
			pruned = true
		}
	}
	return pruned
}

// HasTimeRuns reports whether any benchmark of r keeps its runs.
func (r *Record) HasTimeRuns() bool {
	for _, b := range r.Benchmarks {
		if b.TimeRuns != nil && len(b.TimeRuns.Runs) > 0 {
			return true
		}
	}
	return false
}

// HasFunctions reports whether any benchmark of r keeps its functions.
func (r *Record) HasFunctions() bool {
	for _, b := range r.Benchmarks {
		if len(b.Functions) > 0 || len(b.Counts) > 0 || b.TimeRuns != nil {
			return true
		}
	}
	return false
}

// Marshal writes r as one line of JSON and a newline.
func (r *Record) Marshal() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Unmarshal reads a record of at most MaxNoteBytes and checks its schema;
// Validate checks the rest.
func Unmarshal(data []byte) (*Record, error) {
	if len(data) > MaxNoteBytes {
		return nil, fmt.Errorf("history record: %d bytes, beyond the %d MiB a note may hold", len(data), MaxNoteBytes>>20)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("history record: %w", err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("history record of commit %.12s: schema %q, want %q", r.Commit, r.Schema, Schema)
	}
	return &r, nil
}
