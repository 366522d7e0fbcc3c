package meta

import (
	"runtime"
	"sync"
	"weak"

	"github.com/google/pprof/profile"
)

// The facts of profiles this process made (perfassert's captures), kept
// typed beside them rather than parsed back from their comments: Keep
// stores them when a capture is made, and every reader of a profile's
// facts (Get, Known, Of, Split, SplitProcesses) takes them from here
// first, so that a capture's record, allocations and marks travel from
// the capture to its checks (perfassert's assertions, package limits,
// analysis.NewIndex) without a round trip through text. A profile this
// process did not keep (a file loaded, a baseline, one built by hand) is
// read from its comments, as before.
//
// The table is keyed by the profile's pointer, weakly: an entry goes when
// its profile is collected, so a test binary that captures thousands of
// times keeps only the captures it still holds.
var kept sync.Map // weak.Pointer[profile.Profile] -> Facts

// Keep stores f as the facts of p, replacing any kept before. The caller
// also writes them into p's comments when p may leave the process (a
// capture the test saves, a baseline): Keep does not. Facts kept are
// shared: callers must not modify them once kept.
func Keep(p *profile.Profile, f Facts) {
	if p == nil {
		return
	}
	k := weak.Make(p)
	if _, loaded := kept.Swap(k, f); !loaded {
		runtime.AddCleanup(p, func(k weak.Pointer[profile.Profile]) { kept.Delete(k) }, k)
	}
}

// Kept returns the facts Keep stored for p; ok is false for a profile this
// process did not keep.
func Kept(p *profile.Profile) (f Facts, ok bool) {
	if p == nil {
		return Facts{}, false
	}
	v, ok := kept.Load(weak.Make(p))
	if !ok {
		return Facts{}, false
	}
	return v.(Facts), true
}

// Of returns the facts of p: those kept (Keep) when this process made p,
// or else those its comments hold (Read). p must not be nil.
func Of(p *profile.Profile) Facts {
	if f, ok := Kept(p); ok {
		return f
	}
	return Read(p.Comments)
}

// keepRecord replaces the record of p's kept facts with r, when p is kept:
// Set writes both, so that a kept profile's comments and facts agree.
func keepRecord(p *profile.Profile, r Record) {
	if f, ok := Kept(p); ok {
		f.Record, f.HasRecord, f.RecordErr = r, true, nil
		Keep(p, f)
	}
}

// keepPart keeps q, a part of a kept profile whose facts are f (a run, a
// process), with r as its record; its allocations are the whole
// profile's, as its comments' are (RunComments keeps them).
func keepPart(q *profile.Profile, f Facts, r Record) {
	f.Record, f.HasRecord, f.RecordErr = r, true, nil
	Keep(q, f)
}
