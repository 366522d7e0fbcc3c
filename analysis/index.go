package analysis

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/index"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// Index is a profile prepared once for any number of tables: functions and
// stacks get dense integer ids, and each stack knows its distinct functions,
// so a Table under any selection is one pass over integer arrays. Functions
// builds one and throws it away; a caller that needs several tables of one
// profile (several selections, several sample types, a diff and a report)
// builds the Index once and asks it.
//
// An Index is read-only once built and safe for concurrent use.
//
// What it holds is declared in an internal package (indexload), so that
// package loaders can build an Index it decoded straight from a file, and
// diff and perfassert read the facts of one, without an exported function
// here that takes or returns an internal type.
type Index indexload.Index

// data is what x holds.
func (x *Index) data() *indexload.Index { return (*indexload.Index)(x) }

// ix is x's index.
func (x *Index) ix() *index.Index { return x.data().Index() }

// NewIndex indexes p. p is not modified and may be dropped afterwards: the
// Index keeps what it needs. The error is for profiles too large to index
// (more than 2^31 frames), and for sample values the analysis cannot sum:
// a negative value, or values whose total overflows int64 (the loaders
// refuse those too).
func NewIndex(p *profile.Profile) (*Index, error) {
	// A capture of this process comes with its facts kept (meta.Of);
	// any other profile's are read from its comments.
	x, err := indexload.FromProfile(p, meta.Of(p))
	return (*Index)(x), err
}

// wrap is the Index of x.
func wrap(x *index.Index) *Index { return (*Index)(indexload.New(x)) }

// Processes returns one Index per process of a profile recorded in several
// (a golden baseline perfassert.MatchBaseline recorded in more processes
// of the test binary, whose runs are numbered by process), in the order
// the processes first appear among the runs; each holds all its process's
// runs as one run, whose work is theirs summed, and its tables are those
// of the process's own profile. A profile of one process is one Index of
// one run, and a profile without runs is returned alone. The error names
// metadata or run labels that do not add up.
func (x *Index) Processes() ([]*Index, error) { return x.parts(x.ix().SplitProcesses()) }

// parts wraps the parts x's index was split into (x itself when it is its
// only part).
func (x *Index) parts(parts []*index.Index, err error) ([]*Index, error) {
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 && parts[0] == x.ix() {
		return []*Index{x}, nil
	}
	out := make([]*Index, len(parts))
	for i, p := range parts {
		out[i] = wrap(p)
	}
	return out, nil
}

// Runs returns one Index per run of a profile that holds several runs of
// one program (a baseline recorded by perfassert or hotbudget record, whose
// samples are labelled with their run), in the order they were recorded;
// the Index of a profile without runs is returned alone. Each run's tables
// are those of the run's own profile. The error names metadata or run
// labels that do not add up.
func (x *Index) Runs() ([]*Index, error) { return x.parts(x.ix().SplitRuns()) }

// Work returns the units of work the profile's one run did and what they
// count ("iteration" for perfassert.Capture, "op" for a benchmark), as
// perfassert and hotbudget record store them in the profile; 0 and "" when
// they are unknown or the profile holds several runs (see Runs). The error
// says the stored record is malformed.
func (x *Index) Work() (float64, string, error) {
	f := &x.ix().Facts
	rec := f.Record
	if f.RecordErr != nil || !f.HasRecord || len(rec.Runs) != 1 || !(rec.Runs[0].Work > 0) {
		return 0, "", f.RecordErr
	}
	return rec.Runs[0].Work, string(rec.WorkUnit), nil
}

// Warnings returns the loader's warnings kept in the profile, and a
// warning when the capture that recorded it lost samples (its record's
// sampled CPU time well below the CPU time the process used).
func (x *Index) Warnings() []string {
	w := x.ix().Facts.Warnings
	if rec, ok := x.ix().Facts.Known(); ok {
		if lost := rec.LostSamplesWarning(); lost != "" {
			w = append(w, lost)
		}
	}
	return w
}

// numSamples is the number of samples in the profile.
func (x *Index) numSamples() int { return x.ix().NumSamples() }

// labelSets returns the distinct string label sets of the samples, each as
// a map from key to values (an empty map for samples without labels). Use
// it to say which threads or processes a profile has.
func (x *Index) labelSets() []map[string][]string {
	used := make([]bool, len(x.ix().LabelSets))
	for _, id := range x.ix().SampleLabels {
		used[id] = true
	}
	var out []map[string][]string
	for id, ls := range x.ix().LabelSets {
		if !used[id] {
			continue
		}
		m := make(map[string][]string, len(ls))
		for _, l := range ls {
			m[l.Key] = slices.Clone(l.Values)
		}
		out = append(out, m)
	}
	return out
}

// Table computes self and total time per function under opts, as Functions
// does for the profile the Index was built from.
func (x *Index) Table(opts ...Option) (*Table, error) {
	sel, err := selectionOf(opts)
	if err != nil {
		return nil, err
	}
	t, rowOf, err := x.table(sel)
	if err == nil {
		x.data().SetLast(&indexload.LastTable{Table: t, RowOf: rowOf})
	}
	return t, err
}

// table is Table, with the row of each function id (-1 for functions with
// no row).
func (x *Index) table(sel Selection) (*Table, []int32, error) {
	s, err := x.ix().Sum(sel.index())
	if err != nil {
		return nil, nil, err
	}
	ix := x.ix()
	st := ix.Types[s.TimeIdx]
	t := &Table{
		Total:        s.Total,
		TotalSamples: s.TotalSamples,
		Exact:        ix.Facts.Exact,
		Duration:     time.Duration(ix.DurationNanos),
		SampleType:   st.Type + "/" + st.Unit,
		Unit:         s.Unit,
		Warnings:     slices.Clone(ix.Facts.Warnings),
	}
	if s.Unit != UnitTime && ix.PeriodUnit == "bytes" && ix.Period > 0 {
		t.SampleBytes = ix.Period
	}
	if !t.Exact && s.Unit == UnitTime {
		if n := pbuild.UnitNanos(ix.PeriodUnit); n > 0 {
			t.Period = time.Duration(ix.Period * n)
		}
	}
	// Sorted by Self, then Total (both descending), then Name and File;
	// ties keep the order of first appearance, as a stable sort would. The
	// positions are sorted, not the rows, which are large.
	pos := make([]int32, len(s.Order))
	for i := range pos {
		pos[i] = int32(i)
	}
	slices.SortFunc(pos, func(i, j int32) int {
		a, b := s.Order[i], s.Order[j]
		if c := cmp.Compare(s.Self[b], s.Self[a]); c != 0 {
			return c
		}
		if c := cmp.Compare(s.Tot[b], s.Tot[a]); c != 0 {
			return c
		}
		fa, fb := &ix.Funcs[a], &ix.Funcs[b]
		if c := strings.Compare(fa.Name, fb.Name); c != 0 {
			return c
		}
		if c := strings.Compare(fa.File, fb.File); c != 0 {
			return c
		}
		return cmp.Compare(i, j)
	})
	t.Functions = make([]Function, len(pos))
	rowOf := make([]int32, len(ix.Funcs))
	for i := range rowOf {
		rowOf[i] = -1
	}
	for i, p := range pos {
		id := s.Order[p]
		rowOf[id] = int32(i)
		f := &ix.Funcs[id]
		r := &t.Functions[i]
		*r = Function{
			Name: f.Name, File: f.File, Line: f.StartLine, Column: s.Col[id],
			Self: s.Self[id], Total: s.Tot[id],
			SelfSamples: s.SelfN[id], TotalSamples: s.TotN[id],
			Local: s.Local[id], LocalSamples: s.LocalN[id],
			Key: FuncKey{Name: f.Name, SystemName: f.SystemName, File: f.File, StartLine: f.StartLine},
		}
		if r.Line == 0 {
			r.Line = s.Line[id]
		}
		if t.Total != 0 {
			r.SelfShare = float64(r.Self) / float64(t.Total)
			r.TotalShare = float64(r.Total) / float64(t.Total)
		}
	}
	return t, rowOf, nil
}
