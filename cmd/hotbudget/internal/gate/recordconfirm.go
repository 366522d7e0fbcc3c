package gate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// compareExact judges head's counts against base's (diff.CompareCounts)
// for the functions judge selects, except those whose count is below zero
// on a side (negative, or found so in a profile, as a record made before
// valgrind.Difference stored them): a count below zero is work that did
// not repeat between two processes, not what the ops executed, and is
// never judged, let alone regressed.
func compareExact(base, head *profile.Profile, judge func(string) bool, negative []string) (*diff.CountReport, error) {
	skip := map[string]bool{}
	for _, n := range negative {
		skip[n] = true
	}
	for _, p := range []*profile.Profile{base, head} {
		for n, v := range leafSelf(p) {
			if v < 0 {
				skip[n] = true
			}
		}
	}
	return diff.CompareCounts(base, head, func(n string) bool { return judge(n) && !skip[n] })
}

// leafSelf is the self count (the first value) of each leaf function.
func leafSelf(p *profile.Profile) map[string]int64 {
	m := map[string]int64{}
	for _, s := range p.Sample {
		if len(s.Value) > 0 && len(s.Location) > 0 && len(s.Location[0].Line) > 0 && s.Location[0].Line[0].Function != nil {
			m[s.Location[0].Line[0].Function.Name] += s.Value[0]
		}
	}
	return m
}

// failing reports whether a row fails the gate.
func failing(row diff.CountRow) bool { return row.Verdict == diff.Regressed || row.Verdict == diff.New }

// confirmStages are how many fresh counts of each side confirmExact adds
// at each stage, until a stage's judgement passes: one, then two more. A
// function's count can differ between processes and stay so however many
// ops they run: an inlined probe of the runtime's type-assertion cache
// walks as far as that process's cache places its types, a map walked
// from a random start takes its own path (fxamacker/cbor's
// (*decoder).parseToUnmarshaler 184 -> 199 instructions an op over 2,728
// ops, each side of one commit; BurntSushi/toml's sort.Slice comparison
// in (*Encoder).eMap, called as often as the map's order asks). Judged
// over four processes a side, the first count and three fresh ones,
// against the spread of both sides' own processes, such a function fails
// unchanged code in 1-6 of 1,500 records, where one fresh count a side
// failed it in 139-291 (TestConfirmationFalseAlarms: seeded trials of four
// shapes of spread between processes); a function whose count repeats
// keeps a spread of zero, and its change is judged as before. The stage
// of two counts a side only ends a confirmation early when it passes: a
// function fails only when every stage failed it, so no more often than
// at four counts alone, and most confirmations of unchanged code cost a
// third (TestConfirmationFalseAlarms measures both).
var confirmStages = []int{1, 2}

// exactConfirmations is how many fresh counts of each side a confirmation
// holds at most.
const exactConfirmations = 3

// confirmReps is how many times each confirming process repeats the
// benchmark: once, as the first count's. The confirmation measures how
// far a count moves between processes, which more repetitions do not
// narrow.
const confirmReps = 1

// confirmExact counts benchmark l again on the sides it measured (a base
// from the history stays), in fresh processes of confirmReps repetitions,
// after rep failed, and judges the counts of each side together
// (diff.CompareCounts: a function's change must exceed the spread of each
// side's own processes and the stated minimum), in stages
// (confirmStages): it stops at the first stage whose judgement fails no
// function that rep failed. A function fails only when it failed every
// judgement. It returns the last report without the failures the first
// did not have, and the sides' counts, one profile of several processes
// each.
func (r *recorder) confirmExact(ctx context.Context, vg string, sides []*recSide, l leaf, ops int64, judge func(string) bool, negative []string, ps [2]*profile.Profile, rep *diff.CountReport) (*diff.CountReport, [2]*profile.Profile, error) {
	first := map[string]bool{}
	var firstNames []string
	for _, row := range rep.Rows {
		if failing(row) {
			first[row.Name] = true
			firstNames = append(firstNames, shortName(row.Name))
		}
	}
	// Said before it starts: a confirmation is not in the record's
	// estimate, and under callgrind it can take as long as the first
	// counts did.
	counting := len(sides)
	if r.hist != nil {
		counting--
	}
	stage := func(more int) string {
		return (time.Duration(more) * exactCost(l, confirmReps, counting)).Round(time.Second).String()
	}
	r.progress("%s: %s past its allowance; counting again in fresh processes to confirm: one count more a side (about %s), two more if it fails again (about %s)",
		l.name, textfmt.Line(strings.Join(firstNames, ", ")), stage(confirmStages[0]), stage(confirmStages[1]))
	var fresh [2][]*profile.Profile
	var rep2 *diff.CountReport
	again := ps
	var both []string
	counts := 1
	for _, more := range confirmStages {
		for j, s := range sides {
			if j == 0 && r.hist != nil {
				continue
			}
			for range more {
				c, err := r.countLeaf(ctx, vg, s, l, ops, confirmReps)
				if err != nil {
					return nil, ps, err
				}
				fresh[j] = append(fresh[j], c.diffed)
				negative = append(negative, c.negative...)
			}
			// The first count last: the merged profile keeps its first
			// process's allocations, a fresh one's.
			m, err := meta.MergeProcesses(append(slices.Clone(fresh[j]), ps[j]))
			if err != nil {
				return nil, ps, fmt.Errorf("%s at %s: %w", l.name, s.name, err)
			}
			again[j] = m
		}
		counts += more
		var err error
		if rep2, err = compareExact(again[0], again[1], judge, negative); err != nil {
			return nil, ps, fmt.Errorf("%s: %w", l.name, err)
		}
		both = nil
		for _, row := range rep2.Rows {
			if failing(row) && first[row.Name] {
				both = append(both, shortName(row.Name))
			}
		}
		if len(both) == 0 {
			break
		}
	}
	for j, s := range sides {
		if again[j] != ps[j] {
			if err := writeProfile(countsProfile(s.out, l.pkg, l.name), again[j]); err != nil {
				return nil, ps, err
			}
		}
	}
	var rows []diff.CountRow
	for _, row := range rep2.Rows {
		if failing(row) && !first[row.Name] {
			continue
		}
		rows = append(rows, row)
	}
	rep2.Rows = rows
	what := "not repeated: passed"
	if len(both) > 0 {
		what = "repeated by " + strings.Join(both, ", ")
	}
	r.progress("%s: %s past its allowance; counted again in fresh processes to confirm, each side judged over its %s: %s", l.name, textfmt.Line(strings.Join(firstNames, ", ")), countWord(counts), textfmt.Line(what))
	return rep2, again, nil
}

// countWord is "two counts", "four counts": a side's counts in a
// confirmation.
func countWord(n int) string {
	words := []string{"zero", "one", "two", "three", "four", "five"}
	if n >= 0 && n < len(words) {
		return words[n] + " counts"
	}
	return strconv.Itoa(n) + " counts"
}

// allocConfirmations is how many fresh counts of each side confirm an
// allocation regression at most, one at a time.
const allocConfirmations = 2

// confirmAllocs counts benchmark l again in fresh processes, one pair a
// side at a time (up to allocConfirmations), after first judged some
// function to allocate more, and keeps a regression only where every
// count repeated it; judge is the judgement of one pair of counts. An
// allocation counted in the N-op process and not in the 2N-op one (or the
// other way) is charged to every op of their difference, and a
// benchmark's setup can allocate differently in each process: google/btree's
// BenchmarkSeek builds a tree of 100,000 items from a permutation seeded
// with the time, whose node splits differ by tens between processes, and
// an unchanged commit's insertAt was judged 0.0004 -> 0.0094 objects an op
// (75 objects over 8,004 ops, past the 64 a process may allocate once). A
// real regression allocates in every op of every process and repeats.
func (r *recorder) confirmAllocs(ctx context.Context, vg string, sides []*recSide, l leaf, first *diff.AllocReport, judge func(base, head *profile.Profile) (*diff.AllocReport, error)) (*diff.AllocReport, error) {
	ops := exactOps(l)
	again := func() (*diff.AllocReport, error) {
		var ps [2]*profile.Profile
		for j, s := range sides {
			c, err := r.countLeaf(ctx, vg, s, l, ops, confirmReps)
			if err != nil {
				return nil, err
			}
			ps[j] = c.diffed
		}
		rep, err := judge(ps[0], ps[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.name, err)
		}
		return rep, nil
	}
	line, err := confirmAllocsWith(first, again)
	if err != nil {
		return nil, err
	}
	r.progress("%s: %s", l.name, line)
	return first, nil
}

// confirmAllocsWith is confirmAllocs's rule: again judges a fresh pair of
// counts (nil: nothing to judge); first keeps a regression only where
// every judgement repeated it, and notes the rest. It returns the
// progress line.
func confirmAllocsWith(first *diff.AllocReport, again func() (*diff.AllocReport, error)) (string, error) {
	failing := map[string]bool{}
	var names []string
	for _, row := range first.Regressions() {
		failing[row.Name] = true
		names = append(names, shortName(row.Name))
	}
	counts := 1
	for range allocConfirmations {
		rep, err := again()
		if err != nil {
			return "", err
		}
		counts++
		repeated := map[string]bool{}
		if rep != nil {
			for _, row := range rep.Regressions() {
				if failing[row.Name] {
					repeated[row.Name] = true
				}
			}
		}
		failing = repeated
		if len(failing) == 0 {
			break
		}
	}
	var dropped, kept []string
	for i, row := range first.Rows {
		if row.Verdict != diff.Regressed {
			continue
		}
		if failing[row.Name] {
			kept = append(kept, shortName(row.Name))
			continue
		}
		first.Rows[i].Verdict = diff.Unchanged
		dropped = append(dropped, textfmt.Line(row.Name))
	}
	if len(dropped) > 0 {
		first.Notes = append(first.Notes, fmt.Sprintf("not repeated by every fresh count (%s a side), so not failed: %s: what a benchmark allocates at random from process to process (its setup's input, for one), not its code",
			countWord(counts), strings.Join(dropped, ", ")))
	}
	what := "not repeated: passed"
	if len(kept) > 0 {
		what = "repeated by " + strings.Join(kept, ", ")
	}
	return fmt.Sprintf("%s allocates more; counted again in fresh processes to confirm, %s a side: %s", textfmt.Line(strings.Join(names, ", ")), countWord(counts), textfmt.Line(what)), nil
}
