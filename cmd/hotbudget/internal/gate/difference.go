package gate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// CountDifference reads path as a difference of exact counts, the
// PKG/NAME.instructions-diff.pb.gz that record --instructions writes (2N
// ops counted less N): a pprof profile marked exact whose values are
// counts, one of them below zero where the two processes' runtimes did
// different work. The loaders refuse a negative value; it is nil when path
// is no such profile (the loader's error then stands).
func CountDifference(path string) *profile.Profile {
	p, err := readProfile(path)
	if err != nil || !meta.IsExact(p.Comments) || len(p.SampleType) == 0 {
		return nil
	}
	for _, st := range p.SampleType {
		if st.Unit != analysis.UnitCount {
			return nil
		}
	}
	for _, s := range p.Sample {
		if slices.ContainsFunc(s.Value, func(v int64) bool { return v < 0 }) {
			return p
		}
	}
	return nil
}

// DifferenceTable is top's table of a difference of counts: each
// function's self and total counts of the samples above zero less those
// below, its shares of the difference's total, signed, sorted by the size
// of its self count (as pprof -top sorts a -diff_base profile), then its
// total, then its name.
func DifferenceTable(p *profile.Profile, sel analysis.Selection) (*analysis.Table, error) {
	var parts [2]*analysis.Table
	for i, sign := range []int64{1, -1} {
		q := p.Copy()
		for _, s := range q.Sample {
			for j, v := range s.Value {
				s.Value[j] = max(sign*v, 0)
			}
		}
		x, err := analysis.NewIndex(q)
		if err != nil {
			return nil, err
		}
		if parts[i], err = x.Table(sel); err != nil {
			return nil, err
		}
	}
	pos, neg := parts[0], parts[1]
	t := *pos
	t.Total = pos.Total - neg.Total
	t.TotalSamples = pos.TotalSamples + neg.TotalSamples
	t.Warnings = slices.Concat(pos.Warnings, neg.Warnings)
	byKey := map[analysis.FuncKey]int{}
	t.Functions = slices.Clone(pos.Functions)
	for i, f := range t.Functions {
		byKey[f.Key] = i
	}
	for _, f := range neg.Functions {
		i, ok := byKey[f.Key]
		if !ok {
			i = len(t.Functions)
			byKey[f.Key] = i
			g := f
			g.Self, g.Total, g.Local, g.SelfSamples, g.TotalSamples, g.LocalSamples = 0, 0, 0, 0, 0, 0
			t.Functions = append(t.Functions, g)
		}
		g := &t.Functions[i]
		g.Self -= f.Self
		g.Total -= f.Total
		g.Local -= f.Local
		g.SelfSamples += f.SelfSamples
		g.TotalSamples += f.TotalSamples
		g.LocalSamples += f.LocalSamples
	}
	for i := range t.Functions {
		f := &t.Functions[i]
		f.SelfShare, f.TotalShare = 0, 0
		if t.Total != 0 {
			f.SelfShare, f.TotalShare = float64(f.Self)/float64(t.Total), float64(f.Total)/float64(t.Total)
		}
	}
	abs := func(v int64) int64 {
		if v < 0 {
			return -v
		}
		return v
	}
	slices.SortStableFunc(t.Functions, func(a, b analysis.Function) int {
		return cmp.Or(cmp.Compare(abs(b.Self), abs(a.Self)), cmp.Compare(abs(b.Total), abs(a.Total)), strings.Compare(a.Name, b.Name))
	})
	return &t, nil
}

// DifferenceNote is what top says of a difference of counts, under its
// total.
func DifferenceNote(p *profile.Profile) string {
	below := 0
	for _, s := range p.Sample {
		if slices.ContainsFunc(s.Value, func(v int64) bool { return v < 0 }) {
			below++
		}
	}
	return fmt.Sprintf("A difference of two processes' counts (record --instructions: 2N ops counted less N): %d %s below zero, shown as they are, where the processes' runtimes did different work", below, textfmt.Plural(below, "sample is", "samples are"))
}
