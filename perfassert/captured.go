// A capture as a typed value: its profile and its facts, passed from the capture to the checks.

package perfassert

import (
	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// captured is a profile with its facts (the record: runs, work,
// instrument, build, sampler, depends; the mark of exact counts; the
// allocation profile), typed. A capture this process made (Capture,
// CaptureProfile, Instructions and Cycles captures, the allocation phase's
// profile) keeps its facts beside its profile (meta.Keep) from the moment
// it is made, and every check takes them from there through captureOf:
// MatchBaseline, NoRegression, the Max... assertions (package limits reads
// the kept facts too), Iterations, ProfileName and AllocProfile never
// parse a capture's comments. A profile this process did not make (a
// baseline file, a profile the caller loaded or built) is read from its
// comments once, where it comes in (comments.go).
type captured struct {
	p     *profile.Profile
	facts meta.Facts
	rec   meta.Record // facts.Known(): zero when p holds no record that can be read
	// kept is set when the facts are a capture's of this process
	// (meta.Keep); comments are those of a profile read from outside,
	// where its allocations are still encoded (allocs decodes them).
	kept     bool
	comments []string
}

// captureOf is p's capture: its kept facts when this process made p, its
// comments' otherwise (readCaptured); zero, holding nothing, for nil.
func capturedOf(p *profile.Profile) captured {
	if p == nil {
		return captured{}
	}
	if f, ok := meta.Kept(p); ok {
		return newCaptured(p, f, true, nil)
	}
	return readCaptured(p)
}

// newCaptured is the capture of p with facts f.
func newCaptured(p *profile.Profile, f meta.Facts, kept bool, comments []string) captured {
	rec, _ := f.Known()
	return captured{p: p, facts: f, rec: rec, kept: kept, comments: comments}
}

// index is the analysis.Index of c's profile, which keeps the facts read
// already.
func (c captured) index() (*analysis.Index, error) {
	x, err := indexload.FromProfile(c.p, c.facts)
	return (*analysis.Index)(x), err
}

// isExact reports whether c holds counts of the exact instrument.
func (c captured) isExact() bool { return c.rec.Instrument != "" }

// runs is how many runs c's profile holds, as meta.Split would cut it: 1
// when its runs cannot be told.
func (c captured) runs() int {
	if c.facts.RecordErr != nil {
		return 1
	}
	groups, err := c.facts.Record.GroupRuns(len(c.p.Sample), func(i int) []string { return c.p.Sample[i].Label[meta.LabelRun] })
	if err != nil || groups == nil {
		return 1
	}
	return len(groups)
}

// iterations is the work of c's runs, when c counts it in iterations.
func (c captured) iterations() (float64, bool) {
	rec := c.rec
	if !c.facts.HasRecord || c.facts.RecordErr != nil || len(rec.Runs) == 0 || (rec.WorkUnit != meta.WorkIteration && rec.WorkUnit != "") {
		return 0, false
	}
	var w float64
	for _, r := range rec.Runs {
		if r.Work <= 0 {
			return 0, false
		}
		w += r.Work
	}
	return w, true
}

// raceOf reports whether the profile recorded as r was captured by a
// binary built with the race detector, and whether r says at all
// (captures do).
func raceOf(r meta.Record) (race, known bool) {
	if r.Build == "" {
		return false, false
	}
	return r.Race, true
}

// recordOf is the record of x's profile (meta.Known), if it holds one.
func recordOf(x *analysis.Index) meta.Record {
	r, _ := (*indexload.Index)(x).Index().Facts.Known()
	return r
}

// ProfileName returns the name recorded in p by Capture, or "".
func ProfileName(p *profile.Profile) string {
	if p == nil {
		return ""
	}
	return capturedOf(p).rec.Name
}
