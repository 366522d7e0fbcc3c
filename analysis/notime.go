package analysis

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// ErrNoTime is what errors.Is finds in every error that refuses to measure
// profiles whose selected samples give no function any time (NoTimeError):
// a verdict on them would be a verdict on nothing.
var ErrNoTime = errors.New("no time to measure")

// NoTimeError refuses profiles (one profile, or the profiles of one side
// of a comparison) whose selected samples give their functions no time:
// the profiles hold no samples, the selection (a thread or process, focus,
// ignore, synthetic frames) matches none of them, or the functions a
// comparison judges (diff.WithOnly) have none. A comparison, a limit or a
// budget judged on such profiles would pass by absence: a head profile
// that is empty, or whose thread the change renamed, has no function that
// regressed. CheckTime returns it; diff, perfassert and budget pass it on,
// and the command line exits 2 with its message.
type NoTimeError struct {
	// Side names the profiles' part in a comparison ("base", "head",
	// "current"); "" when they are measured alone.
	Side string
	// Files are the profiles' file names, when the caller knows them
	// (the library does not: the command line sets them).
	Files []string
	// Profiles is how many profiles there are.
	Profiles int
	// Selection is the selection that left no time.
	Selection Selection
	// Only is the pattern of the functions judged (diff.WithOnly) when
	// the profiles have time, but not in any function it matches.
	Only string
	// Samples is how many samples the profiles hold before selection.
	Samples int
	// Have says which threads and processes the profiles have, when the
	// selection names some.
	Have string
}

// Is makes errors.Is(err, ErrNoTime) true.
func (e *NoTimeError) Is(target error) bool { return target == ErrNoTime }

func (e *NoTimeError) Error() string {
	var b strings.Builder
	if w := e.where(); w != "" {
		b.WriteString(w)
		b.WriteString(": ")
	}
	sel := e.Selection.filters()
	switch {
	case e.Samples == 0:
		if e.Profiles > 1 {
			b.WriteString("the profiles have no samples")
		} else {
			b.WriteString("the profile has no samples")
		}
		if sel != "" {
			fmt.Fprintf(&b, " (selection: %s)", sel)
		}
	case e.Only != "":
		fmt.Fprintf(&b, "no time in the functions judged (matching /%s/)", e.Only)
		if sel != "" {
			fmt.Fprintf(&b, " among the samples selected (%s)", sel)
		}
	case sel != "":
		fmt.Fprintf(&b, "the selection (%s) leaves no time", sel)
	default:
		b.WriteString("its samples hold no time")
	}
	if e.Have != "" {
		if e.Profiles > 1 {
			b.WriteString("; the profiles have ")
		} else {
			b.WriteString("; the profile has ")
		}
		b.WriteString(e.Have)
	}
	return b.String()
}

// where names the profiles: the side and the files, as far as known; ""
// for one profile measured alone.
func (e *NoTimeError) where() string {
	var files string
	switch n := len(e.Files); {
	case n > 3:
		files = fmt.Sprintf("%s and %d more", strings.Join(e.Files[:3], ", "), n-3)
	case n > 0:
		files = strings.Join(e.Files, ", ")
	case e.Profiles > 1:
		files = fmt.Sprintf("%d profiles", e.Profiles)
	}
	switch {
	case e.Side == "":
		return files
	case files == "":
		return e.Side
	}
	return e.Side + " (" + files + ")"
}

// filters is s in words without ToCaller, which moves time but removes
// none: what can leave a profile without time.
func (s Selection) filters() string {
	s.ToCaller = nil
	return s.String()
}

// CheckTime is the module's one rule against measuring nothing: it returns
// a *NoTimeError when the tables ts, made of the profiles xs under sel
// (one table per profile, or per run of them), give their functions no
// time at all, pooled. Every path that measures profiles applies it: the
// tables of top, both sides of every comparison (diff.Compare,
// diff.CompareIndex, perfassert's NoRegression and MatchBaseline, budget
// max_regression rules) and perfassert's and the budgets' limits. side
// names the profiles in the error ("base", "head", or "").
//
// Time is the tables' selected time that reaches a function: Focus and
// Ignore keep a sample in the total but out of every function, so a focus
// that matches nothing leaves no time either. Sample values are never
// negative (NewIndex refuses them), so none means zero.
func CheckTime(side string, sel Selection, xs []*Index, ts []*Table) error {
	var total int64
	for _, t := range ts {
		for i := range t.Functions {
			var ok bool
			if total, ok = addTime(total, t.Functions[i].Self); !ok {
				return nil // more than int64 holds: certainly time
			}
		}
	}
	if total > 0 {
		return nil
	}
	e := &NoTimeError{Side: side, Profiles: len(xs), Selection: sel}
	var sets []map[string][]string
	for _, x := range xs {
		e.Samples += x.numSamples()
		if len(sel.Threads) > 0 || len(sel.Processes) > 0 {
			sets = append(sets, x.labelSets()...)
		}
	}
	if e.Samples > 0 && sets != nil {
		e.Have = threadList(sets)
	}
	return e
}

// addTime is a + b, false when the sum of the two (never negative)
// overflows.
func addTime(a, b int64) (int64, bool) { return pbuild.CheckedAdd(a, b) }

// threadList describes the processes and threads that samples with the
// given label sets carry.
func threadList(sets []map[string][]string) string {
	seen := map[string]bool{}
	var out []string
	for _, labels := range sets {
		var parts []string
		for _, k := range []string{pbuild.LabelProcess, pbuild.LabelPID, pbuild.LabelThread, pbuild.LabelTID} {
			if v := labels[k]; len(v) > 0 {
				parts = append(parts, k+" "+textfmt.Name(v[0])) // a label from the profile
			}
		}
		d := strings.Join(parts, " ")
		if d == "" {
			d = "samples without process or thread labels"
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("and %d more", len(out)-10))
	}
	return strings.Join(out, "; ")
}
