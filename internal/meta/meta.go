// Package meta is the typed record hotbudget keeps inside a profile: how the
// profile was made (the build, the race detector, the sampling rate) and the
// runs it holds, each with the work it did.
//
// The record travels in the profile itself, as one comment holding JSON
// (CommentPrefix), so that it survives a round trip through any pprof file
// and a baseline checked into a repository carries it. The comment starts
// with "#", which pprof leaves out of its reports (go tool pprof -top, the
// graph's legend) as a note for tools rather than people: a baseline's
// record lists hundreds of runs. It is written by Set
// and read by Get, or with the facts beside it at once by Read (an index
// reads them once, when it is built). The other facts hotbudget keeps in comments (the
// loader's warnings, the input format, the mark of exact durations, a
// capture's allocations) have their writers and readers here too (MarkExact,
// AppendWarning, AppendFormat, WithAllocProfile and their readers): no other
// code builds or parses hotbudget's comments.
//
// A profile this process made (perfassert's captures) keeps its facts
// typed beside it (Keep), and the readers of a profile (Get, Known, Of,
// Split, SplitProcesses) take them from there: its comments are its saved
// form, read back only from profiles made elsewhere (kept.go).
//
// A profile may hold several runs of the same program (a baseline recorded
// as N captures, `hotbudget record`): each sample then carries the string
// label LabelRun naming its run, and Record.Runs lists the runs in order.
// Split turns such a profile into one profile per run, which is what the
// statistics compare.
package meta

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// CommentPrefix starts the profile comment that holds the record as JSON.
const CommentPrefix = "# hotbudget meta: "

// legacyPrefix started it before it began with "#" (read, never written).
const legacyPrefix = "hotbudget meta: "

// cutRecord returns the JSON of a record comment c.
func cutRecord(c string) (string, bool) { return cutEither(c, CommentPrefix, legacyPrefix) }

// cutEither is strings.CutPrefix for a comment written with prefix, or
// with legacy before prefix replaced it.
func cutEither(c, prefix, legacy string) (string, bool) {
	if s, ok := strings.CutPrefix(c, prefix); ok {
		return s, true
	}
	return strings.CutPrefix(c, legacy)
}

// LabelRun is the sample label naming the run a sample belongs to in a
// profile that holds several runs.
const LabelRun = "hotbudget.run"

// Version is the version of the record's JSON written by Set.
const Version = 1

// WorkUnit names what a run's work counts. The words are stored in
// profiles and shown to users ("time per op"); a caller may use its own.
type WorkUnit string

// The units hotbudget records.
const (
	// WorkIteration is one call of the function perfassert.Capture
	// profiles. A record without a unit that holds work is Capture's from
	// before records named it, and counts iterations too.
	WorkIteration WorkUnit = "iteration"
	// WorkOp is one op of a Go benchmark (b.N counts them).
	WorkOp WorkUnit = "op"
	// WorkRun is a whole run: several benchmarks merged into one profile,
	// whose ops do not add up.
	WorkRun WorkUnit = "run"
)

// Record is what hotbudget knows about how a profile was made. Zero fields
// are unknown.
type Record struct {
	// Name names the profile in messages (Capture: "capture of TestX").
	Name string `json:"name,omitempty"`
	// Build is the Go version and platform of the binary that was
	// profiled, as "go1.26.8 linux/amd64".
	Build string `json:"build,omitempty"`
	// Race is set when that binary had the race detector compiled in.
	Race bool `json:"race,omitempty"`
	// RateHz is the sampling rate asked for, in samples per second.
	RateHz int `json:"rate_hz,omitempty"`
	// Sampler names what took the samples: "perf" (the Linux cpu-clock
	// perf event on the capturing thread, with runtime/pprof for the
	// goroutines it started) or "pprof" (runtime/pprof alone); "" is
	// unknown, as in profiles written before it was recorded.
	Sampler string `json:"sampler,omitempty"`
	// WorkUnit names what Run.Work counts: WorkIteration (Capture), WorkOp
	// (a benchmark's b.N), WorkRun (a whole run), or a caller's own word.
	WorkUnit WorkUnit `json:"work_unit,omitempty"`
	// SampledNanos and UsedNanos are, when a capture measured both, the
	// CPU time its samples stand for and the CPU time the process used
	// while it captured (0: unknown). Samples well short of the CPU used
	// were lost (the kernel delivered fewer profiling signals than asked):
	// absolute times read low, shares are unaffected.
	SampledNanos int64 `json:"sampled_ns,omitempty"`
	UsedNanos    int64 `json:"used_ns,omitempty"`
	// Instrument names what counted an exact capture's values, as
	// "callgrind valgrind-3.19.0" (perfassert.Instructions); "" for
	// sampled profiles.
	Instrument string `json:"instrument,omitempty"`
	// Depends lists what an exact capture's counts depend on besides the
	// code: the Go version, platform and GOAMD64 level, the instrument's
	// version and the module's dependencies, by name. Two captures whose
	// Depends differ count different programs.
	Depends map[string]string `json:"depends,omitempty"`
	// Runs are the runs the profile holds, in order. A profile with one run
	// may leave Label empty; with several, every sample carries LabelRun
	// with one of the labels.
	Runs []Run `json:"runs,omitempty"`
}

// Run is one run held in a profile.
type Run struct {
	// Label is the value of LabelRun on the run's samples ("" for the only
	// run of a profile without run labels).
	Label string `json:"label,omitempty"`
	// Work is how many units of WorkUnit the run did (0: unknown).
	Work float64 `json:"work,omitempty"`
	// CPUNanos is the CPU time the process used during the run, measured
	// apart from the samples (0: unknown).
	CPUNanos int64 `json:"cpu_ns,omitempty"`
	// WallNanos is the wall time the run took, when CPUNanos is known (0:
	// unknown): a process that got much less CPU than wall time shared its
	// machine with other work.
	WallNanos int64 `json:"wall_ns,omitempty"`
	// Process numbers the process the run was captured in, from 1, in a
	// profile that holds the captures of several processes (a baseline
	// recorded in several: MergeProcesses); 0 in a profile of one process.
	Process int `json:"process,omitempty"`
	// PeriodNanos is the sampling period of the capture the run came
	// from, when it differs between the processes of a profile
	// (MergeProcesses): the profile's own Period is then the longest, and
	// SplitProcesses gives each process its own. 0: the profile's.
	PeriodNanos int64 `json:"period_ns,omitempty"`
	// Misses is, for an exact capture of instructions, how many times
	// each function's code called the runtime's type-assertion and
	// type-switch miss paths during the run (exactalloc.MissPaths), by
	// function: the caches those calls probed fill at random, so what the
	// function's own count holds of them differs from process to process
	// (diff.CompareCounts allows it). Absent: not counted.
	Misses map[string]int64 `json:"type_cache_misses,omitempty"`
}

type wire struct {
	V int `json:"v"`
	Record
}

// Known returns the record stored in p, zero with ok false when p is nil,
// holds none, or holds one that cannot be read: for readers that then
// know nothing (a name for messages, the work a profile did).
func Known(p *profile.Profile) (r Record, ok bool) {
	if p == nil {
		return Record{}, false
	}
	r, ok, err := Get(p)
	if err != nil {
		return Record{}, false
	}
	return r, ok
}

// Get returns the record of p: kept (Keep) when this process made p,
// stored in its comments otherwise. ok is false when p holds none.
// Profiles written before the record existed (comments "hotbudget name: ",
// "hotbudget build: ", "hotbudget iterations: ") are read too.
func Get(p *profile.Profile) (r Record, ok bool, err error) {
	if p == nil {
		return Record{}, false, nil
	}
	if f, kept := Kept(p); kept {
		return f.Record, f.HasRecord, f.RecordErr
	}
	return FromComments(p.Comments)
}

// FromComments is Get for a profile's comments, as an index keeps them.
func FromComments(comments []string) (r Record, ok bool, err error) {
	for _, c := range comments {
		if s, found := cutRecord(c); found {
			var w wire
			if err := json.Unmarshal([]byte(s), &w); err != nil {
				return Record{}, false, fmt.Errorf("hotbudget metadata in the profile is malformed: %w", err)
			}
			if w.V > Version {
				return Record{}, false, fmt.Errorf("hotbudget metadata version %d is newer than this hotbudget reads (%d): upgrade hotbudget", w.V, Version)
			}
			return w.Record, true, nil
		}
	}
	return legacy(comments)
}

// legacy reads the comments Capture wrote before the record existed.
func legacy(comments []string) (Record, bool, error) {
	var r Record
	found := false
	for _, c := range comments {
		switch {
		case strings.HasPrefix(c, legacyName):
			r.Name, found = strings.TrimPrefix(c, legacyName), true
		case strings.HasPrefix(c, legacyBuild):
			b := strings.TrimPrefix(c, legacyBuild)
			r.Build, r.Race, found = strings.TrimSuffix(b, " race"), strings.HasSuffix(b, " race"), true
		case strings.HasPrefix(c, legacyIterations):
			n, err := strconv.ParseInt(strings.TrimPrefix(c, legacyIterations), 10, 64)
			if err != nil || n < 0 {
				return Record{}, false, fmt.Errorf("hotbudget iterations comment %q is malformed", c)
			}
			r.WorkUnit, r.Runs, found = WorkIteration, []Run{{Work: float64(n)}}, true
		}
	}
	return r, found, nil
}

// WithRecord returns a copy of comments with r as their record, replacing
// any record (and legacy comments) they held: Set for comments being
// assembled before their profile (a capture's, written from its kept
// facts).
func WithRecord(comments []string, r Record) []string { return withRecord(comments, r) }

// Set stores r in p, replacing any record (and legacy comments) p held,
// and in p's kept facts when p is kept (Keep).
func Set(p *profile.Profile, r Record) {
	p.Comments = withRecord(p.Comments, r)
	keepRecord(p, r)
}

// withRecord returns a copy of comments with r as the record.
func withRecord(comments []string, r Record) []string {
	kept := comments[:0:0]
	for _, c := range comments {
		if _, rec := cutRecord(c); rec || strings.HasPrefix(c, legacyName) ||
			strings.HasPrefix(c, legacyBuild) || strings.HasPrefix(c, legacyIterations) {
			continue
		}
		kept = append(kept, c)
	}
	b, err := json.Marshal(wire{V: Version, Record: r})
	if err != nil {
		panic("meta: cannot marshal a Record: " + err.Error()) // only plain fields: cannot happen
	}
	return append(kept, CommentPrefix+string(b))
}

// Split returns one profile per run of p, in the order of the record's Runs,
// each with a record of its one run. A profile without run labels is
// returned as it is, alone. Samples without LabelRun in a profile with run
// labels, or with a label the record does not list, are an error: the runs
// would not add up to the profile. p is not modified. When p is kept
// (Keep), so is each run, with its record (a capture's runs are captures).
func Split(p *profile.Profile) ([]*profile.Profile, error) {
	r, _, err := Get(p)
	if err != nil {
		return nil, err
	}
	f, isKept := Kept(p)
	groups, err := r.GroupRuns(len(p.Sample), func(i int) []string { return p.Sample[i].Label[LabelRun] })
	if err != nil || groups == nil {
		return []*profile.Profile{p}, err
	}
	out := make([]*profile.Profile, len(groups))
	for j, g := range groups {
		// Locations, functions and mappings are shared with p: callers
		// read them, and a deep copy per run would cost as much as p.
		q := &profile.Profile{
			SampleType: p.SampleType, DefaultSampleType: p.DefaultSampleType,
			Mapping: p.Mapping, Location: p.Location, Function: p.Function,
			Comments: r.RunComments(p.Comments, j), DocURL: p.DocURL,
			DropFrames: p.DropFrames, KeepFrames: p.KeepFrames,
			TimeNanos:  p.TimeNanos, // DurationNanos: the span of one run is unknown
			PeriodType: p.PeriodType, Period: p.Period,
		}
		q.Sample = make([]*profile.Sample, len(g))
		for k, i := range g {
			q.Sample[k] = p.Sample[i]
		}
		if isKept {
			keepPart(q, f, r.Run(j))
		}
		out[j] = q
	}
	return out, nil
}

// RunComments returns comments with, as their record, r reduced to its run
// j (Run): the comments of that run's profile (Split).
func (r Record) RunComments(comments []string, j int) []string {
	return withRecord(comments, r.Run(j))
}

// Run is r reduced to its run j: the record of that run's profile (Split),
// for a caller that keeps it beside the comments rather than reading them
// again.
func (r Record) Run(j int) Record {
	one := r
	one.Runs = []Run{r.Runs[j]}
	one.SampledNanos, one.UsedNanos = 0, 0 // the capture's, not the run's
	return one
}

// GroupRuns returns the samples (by index) of each run of r, given the
// LabelRun values of each of n samples; nil when no sample has one. The
// error names samples that belong to no run of r, or runs of r that cannot
// be told apart.
func (r Record) GroupRuns(n int, labels func(i int) []string) ([][]int32, error) {
	labelled := false
	for i := range n {
		if len(labels(i)) > 0 {
			labelled = true
			break
		}
	}
	if !labelled {
		return nil, nil
	}
	index := make(map[string]int, len(r.Runs))
	for i, run := range r.Runs {
		if run.Label == "" {
			return nil, fmt.Errorf("run %d of the profile's hotbudget metadata has no label, but its samples carry %q labels", i+1, LabelRun)
		}
		if _, dup := index[run.Label]; dup {
			return nil, fmt.Errorf("run label %q appears twice in the profile's hotbudget metadata", run.Label)
		}
		index[run.Label] = i
	}
	groups := make([][]int32, len(r.Runs))
	for i := range n {
		l := labels(i)
		if len(l) != 1 {
			return nil, fmt.Errorf("sample %d has %d %q labels, want 1: every sample of a profile with runs belongs to one", i, len(l), LabelRun)
		}
		j, ok := index[l[0]]
		if !ok {
			return nil, fmt.Errorf("sample %d belongs to run %q, which the profile's hotbudget metadata does not list", i, l[0])
		}
		groups[j] = append(groups[j], int32(i))
	}
	return groups, nil
}

// SamplesLost reports whether a capture's samples account for much less
// CPU time than the process used (SampledNanos well below UsedNanos): the
// kernel delivered fewer profiling signals than asked, as happens at rates
// above its timer frequency (often 250 Hz on Linux). Absolute times then
// read low; shares are unaffected. Checks decide on this, never on the
// warning's words.
func (r Record) SamplesLost() bool {
	return r.UsedNanos >= int64(50*time.Millisecond) && float64(r.SampledNanos) < 0.7*float64(r.UsedNanos)
}

// LostSamplesWarning says what SamplesLost found ("" when it found
// nothing).
func (r Record) LostSamplesWarning() string {
	if !r.SamplesLost() {
		return ""
	}
	return fmt.Sprintf("the samples account for %s of CPU time but the process used %s while capturing: samples were lost (a Rate above the kernel's timer frequency?), so absolute times read low; shares are unaffected",
		textfmt.Duration(time.Duration(r.SampledNanos)), textfmt.Duration(time.Duration(r.UsedNanos)))
}
