// Package indexload lets package loaders, which owns format detection, the
// limits, the options and the fast path for pprof files, return an
// analysis.Index built from an index.Index, and perfassert read the facts
// of a baseline it loaded so (its record, its allocations, its functions),
// without a function in analysis's exported API that takes or returns an
// internal type: analysis sets Wrap and Unwrap when it is initialised,
// before loaders and perfassert (which import it) can be called.
package indexload

import "github.com/hotbudget/hotbudget/internal/index"

// Wrap returns the *analysis.Index of x.
var Wrap func(x *index.Index) any

// Unwrap returns the index.Index of an *analysis.Index.
var Unwrap func(x any) *index.Index
