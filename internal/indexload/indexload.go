// Package indexload owns what an analysis.Index holds: the index.Index of
// its profile and the last table built from it. analysis.Index is defined
// as this package's Index (type Index indexload.Index), so the two have
// one underlying struct and a pointer to either converts to the other:
// package loaders, which decodes a file straight into an index.Index,
// returns (*analysis.Index)(indexload.New(x)), and diff and perfassert read
// the facts of an Index they were given (its record, its allocations, its
// functions) through (*indexload.Index)(x). The fields are unexported, so
// analysis.Index shows none to its users and analysis's exported API
// takes and returns no internal type; imports point one way, every
// package reaching this one from above it.
package indexload

import (
	"sync/atomic"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/index"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// Index is the data of an analysis.Index. It is read-only once built,
// but for the table hint, which is atomic.
type Index struct {
	x *index.Index
	// last is the last table built and its rows by function id, so that
	// analysis need not map the rows again (a hint: any table works).
	last atomic.Pointer[LastTable]
}

// LastTable is a table analysis built (an *analysis.Table, which this
// package cannot name) and the row of each function id in it (-1 for
// functions with no row).
type LastTable struct {
	Table any
	RowOf []int32
}

// New returns the Index of x.
func New(x *index.Index) *Index { return &Index{x: x} }

// FromProfile indexes p, whose facts f were read already (meta.Read(p.Comments)),
// as analysis.NewIndex does: the error is index.FromProfile's or
// CheckValues's.
func FromProfile(p *profile.Profile, f meta.Facts) (*Index, error) {
	x, err := index.FromProfileFacts(p, f)
	if err != nil {
		return nil, err
	}
	if err := x.CheckValues(); err != nil {
		return nil, err
	}
	return New(x), nil
}

// Index returns the index.Index of h.
func (h *Index) Index() *index.Index { return h.x }

// Last returns the table SetLast kept last, nil before any.
func (h *Index) Last() *LastTable { return h.last.Load() }

// SetLast keeps l as the last table built.
func (h *Index) SetLast(l *LastTable) { h.last.Store(l) }
