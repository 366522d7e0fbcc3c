package meta

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/google/pprof/profile"
)

// Processes returns how many processes the runs of r were captured in: the
// distinct Process numbers of its runs, 1 when none is numbered (a profile
// of one process) and 0 when r lists no run.
func (r Record) Processes() int {
	if len(r.Runs) == 0 {
		return 0
	}
	seen := map[int]bool{}
	for _, run := range r.Runs {
		seen[run.Process] = true
	}
	return len(seen)
}

// MergeProcesses returns one profile holding the captures ps, each made in
// a process of its own, with every run of each: the runs keep their work
// and CPU time, are numbered by the process they came from (Run.Process,
// from 1, in the order of ps), keep their capture's sampling period
// (Run.PeriodNanos; the profile's Period is the longest) and are
// relabelled "P.LABEL" so that the labels of different processes stay
// apart. The record's other fields are the
// first capture's, with the sampled and used CPU times summed; the
// comments other than the record are the first capture's too (so a
// baseline keeps the first capture's allocation profile). The captures
// must hold one process each and record their runs; ps are not modified.
func MergeProcesses(ps []*profile.Profile) (*profile.Profile, error) {
	if len(ps) == 0 {
		return nil, errors.New("no captures to merge")
	}
	var merged Record
	copies := make([]*profile.Profile, len(ps))
	for i, p := range ps {
		if p == nil {
			return nil, fmt.Errorf("capture %d is nil", i+1)
		}
		r, ok, err := Get(p)
		if err != nil {
			return nil, fmt.Errorf("capture %d: %w", i+1, err)
		}
		if !ok || len(r.Runs) == 0 {
			return nil, fmt.Errorf("capture %d records no runs", i+1)
		}
		if n := r.Processes(); n != 1 || r.Runs[0].Process != 0 {
			return nil, fmt.Errorf("capture %d holds %d processes already, want one", i+1, n)
		}
		if i == 0 {
			merged = r
			merged.Runs = nil
			merged.SampledNanos, merged.UsedNanos = 0, 0
		} else if r.WorkUnit != merged.WorkUnit {
			return nil, fmt.Errorf("capture %d counts its work in %q, capture 1 in %q", i+1, r.WorkUnit, merged.WorkUnit)
		}
		merged.SampledNanos += r.SampledNanos
		merged.UsedNanos += r.UsedNanos
		prefix := strconv.Itoa(i+1) + "."
		relabel := make(map[string]string, len(r.Runs))
		for _, run := range r.Runs {
			old := run.Label
			run.Label, run.Process, run.PeriodNanos = prefix+old, i+1, p.Period
			relabel[old] = run.Label
			merged.Runs = append(merged.Runs, run)
		}
		q := p.Copy()
		for j, s := range q.Sample {
			l := s.Label[LabelRun]
			switch {
			case len(l) == 1:
				s.Label[LabelRun] = []string{relabel[l[0]]}
			case len(l) == 0 && len(r.Runs) == 1:
				// The only run of an unlabelled capture.
				if s.Label == nil {
					s.Label = map[string][]string{}
				}
				s.Label[LabelRun] = []string{relabel[r.Runs[0].Label]}
			default:
				return nil, fmt.Errorf("capture %d: sample %d has %d %q labels, want 1", i+1, j, len(l), LabelRun)
			}
			if s.Label[LabelRun][0] == "" {
				return nil, fmt.Errorf("capture %d: sample %d belongs to a run its record does not list", i+1, j)
			}
		}
		copies[i] = q
	}
	out, err := profile.Merge(copies)
	if err != nil {
		return nil, fmt.Errorf("merging the captures: %w", err)
	}
	out.Comments = withRecord(ps[0].Comments, merged)
	return out, nil
}

// SplitProcesses returns one profile per process of p (Record.Processes),
// each holding the samples of all that process's runs as one run whose
// work and CPU time are their sums, in the order the processes first
// appear among the runs (Record.ProcessParts). A profile of one process is
// returned as one profile of one run too: comparing captures of several
// processes, a process is the unit that varies alike on both sides (the
// runs within one process share its memory layout and the machine's
// state, and vary less than processes do). p is not modified. When p is
// kept (Keep), so is each process's profile, with its record.
func SplitProcesses(p *profile.Profile) ([]*profile.Profile, error) {
	r, ok, err := Get(p)
	if err != nil {
		return nil, err
	}
	if !ok || len(r.Runs) == 0 {
		return []*profile.Profile{p}, nil
	}
	parts, err := r.ProcessParts(p.Comments, p.Period, len(p.Sample), func(i int) []string { return p.Sample[i].Label[LabelRun] })
	if err != nil {
		return nil, err
	}
	out := make([]*profile.Profile, 0, len(parts))
	for _, part := range parts {
		samples := make([]*profile.Sample, len(part.Samples))
		for k, i := range part.Samples {
			// A copy, labelled with the one run it now belongs to: p's
			// samples keep their labels.
			s := *p.Sample[i]
			s.Label = maps.Clone(s.Label)
			if s.Label == nil {
				s.Label = map[string][]string{}
			}
			s.Label[LabelRun] = []string{part.Label}
			samples[k] = &s
		}
		q := &profile.Profile{
			SampleType: p.SampleType, DefaultSampleType: p.DefaultSampleType,
			Mapping: p.Mapping, Location: p.Location, Function: p.Function,
			Comments: part.Comments, DocURL: p.DocURL,
			DropFrames: p.DropFrames, KeepFrames: p.KeepFrames,
			TimeNanos:  p.TimeNanos,
			PeriodType: p.PeriodType, Period: part.Period,
			Sample: samples,
		}
		if f, isKept := Kept(p); isKept {
			keepPart(q, f, part.Record)
		}
		out = append(out, q)
	}
	return out, nil
}

// ProcessPart is one process of a profile of several (Record.ProcessParts).
type ProcessPart struct {
	// Label is the process's one run's label ("1", "2", ... in order):
	// its samples' LabelRun once split.
	Label string
	// Samples are the indices of the process's samples, ascending.
	Samples []int32
	// Comments are the profile's comments with, as their record, one run
	// whose work and CPU time are the process's runs' sums (work 0 when
	// one of them did not know its own).
	Comments []string
	// Record is the record Comments hold, for a caller that keeps it
	// rather than reading the comments again.
	Record Record
	// Period is the process's own sampling period (Run.PeriodNanos), or
	// the profile's when its runs do not say.
	Period int64
}

// ProcessParts groups the n samples of a profile recorded as r (comments,
// with sampling period period; labels gives each sample's LabelRun values)
// by the process that made them, in the order the processes first appear
// among r's runs: what SplitProcesses makes profiles of, and index.Index
// indexes. r must list runs; a profile whose samples carry no run labels
// is one part of every sample when its runs are of one process, and an
// error otherwise (its samples cannot be told apart by process).
func (r Record) ProcessParts(comments []string, period int64, n int, labels func(i int) []string) ([]ProcessPart, error) {
	if len(r.Runs) == 0 {
		return nil, errors.New("the profile's hotbudget metadata lists no runs")
	}
	groups, err := r.GroupRuns(n, labels)
	if err != nil {
		return nil, err
	}
	var order []int
	byProc := map[int][]int{} // process -> runs
	for j, run := range r.Runs {
		if _, seen := byProc[run.Process]; !seen {
			order = append(order, run.Process)
		}
		byProc[run.Process] = append(byProc[run.Process], j)
	}
	if groups == nil && len(order) > 1 {
		// Samples without run labels cannot be told apart by process.
		return nil, fmt.Errorf("the profile's hotbudget metadata lists runs of %d processes, but its samples carry no %q labels", len(order), LabelRun)
	}
	parts := make([]ProcessPart, 0, len(order))
	for k, proc := range order {
		one := r
		label := strconv.Itoa(k + 1)
		one.Runs = []Run{{Label: label}}
		one.SampledNanos, one.UsedNanos = 0, 0
		var idx []int32
		known := true
		for _, j := range byProc[proc] {
			run := r.Runs[j]
			if !(run.Work > 0) {
				known = false
			}
			one.Runs[0].Work += run.Work
			one.Runs[0].CPUNanos += run.CPUNanos
			one.Runs[0].WallNanos += run.WallNanos
			for fn, n := range run.Misses {
				if one.Runs[0].Misses == nil {
					one.Runs[0].Misses = map[string]int64{}
				}
				one.Runs[0].Misses[fn] += n
			}
			if groups != nil {
				idx = append(idx, groups[j]...)
			}
		}
		if !known {
			one.Runs[0].Work = 0
		}
		// The process's own sampling period: a capture whose samples
		// weigh more (one of runtime/pprof's beside perf's) must not
		// make every other process of the baseline count its samples
		// as fewer.
		own := period
		if p := r.Runs[byProc[proc][0]].PeriodNanos; p > 0 {
			own = p
		}
		if groups == nil { // one unlabelled run
			idx = make([]int32, n)
			for i := range idx {
				idx[i] = int32(i)
			}
		}
		slices.Sort(idx)
		parts = append(parts, ProcessPart{Label: label, Samples: idx, Comments: withRecord(comments, one), Record: one, Period: own})
	}
	return parts, nil
}
