// Package indexload lets package loaders, which owns format detection, the
// limits, the options and the fast path for pprof files, return an
// analysis.Index built from an index.Index, without a function in analysis's
// exported API that takes an internal type: analysis sets Wrap when it is
// initialised, before loaders (which imports it) can be called.
package indexload

import "github.com/hotbudget/hotbudget/internal/index"

// Wrap returns the *analysis.Index of x.
var Wrap func(x *index.Index) any
