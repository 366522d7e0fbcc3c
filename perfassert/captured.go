// The record a capture keeps in its profile (internal/meta), read once per profile and passed along.

package perfassert

import (
	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// recorded is a profile with its facts read once (meta.Read: the record,
// the mark of exact counts, the loaders' warnings), for code that asks
// several questions of one profile: MatchBaseline reads each side, the
// current capture and the baseline, into one and passes it along, so that
// the race check, the choice of an exact comparison, the recording, the
// comparison's index and its notes take the record from here instead of
// parsing the profile's comments again.
type recorded struct {
	p     *profile.Profile
	facts meta.Facts
	rec   meta.Record // facts.Known(): zero when p holds no record that can be read
}

// readRecorded reads p's facts.
func readRecorded(p *profile.Profile) recorded {
	f := meta.Read(p.Comments)
	rec, _ := f.Known()
	return recorded{p: p, facts: f, rec: rec}
}

// index is the analysis.Index of r's profile, which keeps the facts read
// already.
func (r recorded) index() (*analysis.Index, error) {
	x, err := indexload.FromProfile(r.p, r.facts)
	return (*analysis.Index)(x), err
}

// isExact reports whether r holds counts of the exact instrument.
func (r recorded) isExact() bool { return r.rec.Instrument != "" }

// runs is how many runs r's profile holds, as meta.Split would cut it: 1
// when its runs cannot be told.
func (r recorded) runs() int {
	if r.facts.RecordErr != nil {
		return 1
	}
	groups, err := r.facts.Record.GroupRuns(len(r.p.Sample), func(i int) []string { return r.p.Sample[i].Label[meta.LabelRun] })
	if err != nil || groups == nil {
		return 1
	}
	return len(groups)
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
	r, _ := meta.Known(p)
	return r.Name
}
