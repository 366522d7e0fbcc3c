package diff_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// allocProfile builds an exact allocation profile from stacks (leaf first,
// "func@line") with their objects and bytes.
func allocProfile(stacks map[string][2]int64) *profile.Profile { return testutil.AllocProfile(stacks) }

// TestCompareAllocsTinyBlocks checks that 16-byte blocks, which the tiny
// allocator shares among the small objects of several functions, move
// between functions without a verdict: at head m.f stopped allocating its
// 4-byte object, and m.g's 12-byte objects, which fitted the block m.f
// opened, now open a block each; m.g's code did not change. A function
// allocating 24-byte objects more still regresses.
func TestCompareAllocsTinyBlocks(t *testing.T) {
	only := regexp.MustCompile(`^m\.`)
	base := allocProfile(map[string][2]int64{"m.f@1;m.run@1": {100, 1600}, "m.h@3;m.run@3": {100, 2400}})
	head := allocProfile(map[string][2]int64{"m.g@2;m.run@2": {100, 1600}, "m.h@3;m.run@3": {200, 4800}})
	bt, _ := diff.AllocTableOf(base, 100, only)
	ht, _ := diff.AllocTableOf(head, 100, only)
	rep := diff.CompareAllocs(bt, ht, "iteration", diff.DefaultAllocTolerance)
	var regressed []string
	for _, r := range rep.Regressions() {
		regressed = append(regressed, r.Name)
	}
	if !slices.Equal(regressed, []string{"m.h"}) {
		t.Errorf("regressed %v, want m.h alone (m.g's 16-byte blocks are the tiny allocator's)", regressed)
	}
	for _, row := range rep.Rows {
		if row.Name == "m.g" && (row.Head.Blocks16.Objects != 1 || row.Head.Self.Objects != 1) {
			t.Errorf("m.g: %+v, want 1 object an iteration, in a 16-byte block", row)
		}
	}
	var b strings.Builder
	rep.Write(&b, "text")
	if !strings.Contains(b.String(), "note: 16-byte blocks per iteration changed in m.f -1, m.g +1: shown, not judged") || !strings.Contains(b.String(), "record --instructions") {
		t.Errorf("no note on m.g's blocks:\n%s", b.String())
	}
}

// TestCompareAllocsSizedOnce: a function whose two 16-byte allocations
// became one of 32 bytes (a buffer sized once instead of grown) allocates
// no more: not judged from a memory profile, whose 16-byte blocks alone
// are not; one of 400 bytes is.
func TestCompareAllocsSizedOnce(t *testing.T) {
	only := regexp.MustCompile(`^m\.`)
	base := allocProfile(map[string][2]int64{"m.b@1;m.run@1": {200, 3200}})
	head := allocProfile(map[string][2]int64{"m.b@1;m.run@1": {100, 3200}})
	more := allocProfile(map[string][2]int64{"m.b@1;m.run@1": {100, 40000}})
	bt, _ := diff.AllocTableOf(base, 100, only)
	for _, c := range []struct {
		head *profile.Profile
		fail bool
	}{{head, false}, {more, true}} {
		ht, _ := diff.AllocTableOf(c.head, 100, only)
		if rep := diff.CompareAllocs(bt, ht, "iteration", diff.DefaultAllocTolerance); rep.Failed() != c.fail {
			t.Errorf("16-byte objects to %v bytes: failed %v, want %v", c.head.Sample[0].Value[1]/100, rep.Failed(), c.fail)
		}
	}
}

// TestCompareAllocsBlocksNeverJudged: 16-byte blocks that grew as a whole
// (m.f's tiny objects removed, so that m.g's, which shared m.f's blocks,
// now open more blocks of their own, and m.k, untouched, opens one more)
// fail no function of a memory profile; counted one by one
// (AllocTolerance.Counted), where a 16-byte object is an object, one more
// is a regression and one fewer is not.
func TestCompareAllocsBlocksNeverJudged(t *testing.T) {
	only := regexp.MustCompile(`^m\.`)
	base := allocProfile(map[string][2]int64{"m.f@1;m.run@1": {100, 1600}, "m.g@2;m.run@2": {100, 1600}, "m.k@3;m.run@3": {100, 1600}})
	head := allocProfile(map[string][2]int64{"m.g@2;m.run@2": {200, 3200}, "m.k@3;m.run@3": {200, 3200}})
	bt, _ := diff.AllocTableOf(base, 100, only)
	ht, _ := diff.AllocTableOf(head, 100, only)
	rep := diff.CompareAllocs(bt, ht, "iteration", diff.DefaultAllocTolerance)
	if rep.Failed() {
		t.Errorf("a memory profile's 16-byte blocks judged: %+v", rep.Regressions())
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "m.g +1") || !strings.Contains(rep.Notes[0], "m.k +1") {
		t.Errorf("notes %q, want m.g's and m.k's blocks shown", rep.Notes)
	}
	counted := diff.CompareAllocs(bt, ht, "iteration", diff.AllocTolerance{Counted: true})
	var regressed []string
	for _, r := range counted.Regressions() {
		regressed = append(regressed, r.Name)
	}
	if !slices.Equal(regressed, []string{"m.g", "m.k"}) || len(counted.Notes) != 0 {
		t.Errorf("counted: regressed %v, notes %q; want m.g and m.k, no note", regressed, counted.Notes)
	}
	// Counted, one object fewer: no regression (m.f is gone).
	if back := diff.CompareAllocs(ht, bt, "iteration", diff.AllocTolerance{Counted: true}); back.Failed() {
		t.Errorf("counted decrease judged: %+v", back.Regressions())
	}
}

// TestCompareAllocsExact works a comparison out by hand: per 100
// iterations, m.parse allocates 200 objects itself (2 an iteration) and
// 100 through strings.Clone (attributed to m.parse, the innermost
// function of the module), m.run 100; at head m.parse allocates one more
// object of 16 bytes an iteration, on line 12. Exact data: one run a side
// decides.
func TestCompareAllocsExact(t *testing.T) {
	only := regexp.MustCompile(`^m\.`)
	base := allocProfile(map[string][2]int64{
		"m.parse@10;m.run@3":                 {200, 6400},
		"strings.Clone@5;m.parse@11;m.run@3": {100, 800},
		"m.run@4":                            {100, 1600},
		"runtime.malg@1":                     {7, 700}, // no module frame: not judged
	})
	head := allocProfile(map[string][2]int64{
		"m.parse@10;m.run@3":                 {200, 6400},
		"strings.Clone@5;m.parse@11;m.run@3": {100, 800},
		"m.parse@12;m.run@3":                 {100, 2400},
		"m.run@4":                            {100, 1600},
	})
	bt, err := diff.AllocTableOf(base, 100, only)
	if err != nil {
		t.Fatal(err)
	}
	ht, err := diff.AllocTableOf(head, 100, only)
	if err != nil {
		t.Fatal(err)
	}
	if bt.All.Objects != 407 || bt.Judged.Objects != 400 {
		t.Errorf("base: all %v, judged %v objects; want 407 and 400", bt.All.Objects, bt.Judged.Objects)
	}
	rep := diff.CompareAllocs(bt, ht, "iteration", diff.DefaultAllocTolerance)
	if !rep.Failed() || len(rep.Regressions()) != 1 {
		t.Fatalf("want m.parse regressed alone: %+v", rep.Rows)
	}
	r := rep.Regressions()[0]
	if r.Name != "m.parse" || r.Base.Self != (diff.AllocCount{Objects: 3, Bytes: 72}) || r.Head.Self != (diff.AllocCount{Objects: 4, Bytes: 96}) {
		t.Errorf("m.parse row: %+v", r)
	}
	if len(r.Lines) != 1 || r.Lines[0].Line != "m.parse.go:12" || r.Lines[0].Head.Objects != 1 {
		t.Errorf("m.parse's changed lines: %+v, want m.parse.go:12 with 1 object", r.Lines)
	}
	for _, row := range rep.Rows {
		if row.Name == "m.run" && (row.Verdict != diff.Unchanged || row.Head.Total.Objects != 5) {
			t.Errorf("m.run: %+v, want unchanged, 5 objects in total at head", row)
		}
	}
	// Unchanged: no regression, whatever the work (exact, per iteration).
	bt2, _ := diff.AllocTableOf(base, 100, only)
	if rep := diff.CompareAllocs(bt, bt2, "iteration", diff.DefaultAllocTolerance); rep.Failed() {
		t.Errorf("A/A failed: %+v", rep.Rows)
	}
	// Half an object more an iteration is within the tolerance; the
	// tolerance is per iteration, not per run.
	half := allocProfile(map[string][2]int64{"m.parse@10;m.run@3": {250, 6400}, "strings.Clone@5;m.parse@11;m.run@3": {100, 800}, "m.run@4": {100, 1600}})
	ht2, _ := diff.AllocTableOf(half, 100, only)
	if rep := diff.CompareAllocs(bt, ht2, "iteration", diff.DefaultAllocTolerance); rep.Failed() {
		t.Errorf("+0.5 objects an iteration regressed: %+v", rep.Regressions())
	}

	var txt, md, js, html bytes.Buffer
	if err := rep.Write(&txt, "text"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"allocations per iteration (exact): 1 function allocates more: m.parse (3 objects, 72B -> 4 objects, 96B)",
		"regressed  m.parse: self 3 objects, 72B -> 4 objects, 96B (+1 object, +24B)", "m.parse.go:12: 0 objects, 0B -> 1 object, 24B"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	if strings.Contains(txt.String(), "ms") || strings.Contains(txt.String(), "µs") {
		t.Errorf("text shows a time:\n%s", txt.String())
	}
	if err := rep.Write(&md, "markdown"); err != nil || !strings.Contains(md.String(), "| `m.parse` | 3 objects, 72B | 4 objects, 96B | +1 object, +24B |") {
		t.Errorf("markdown (%v):\n%s", err, md.String())
	}
	if err := rep.Write(&js, "json"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Exact     bool
		Functions []struct {
			Name    string
			Verdict string
			Head    struct{ Self diff.AllocCount }
		}
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || !doc.Exact || doc.Functions[0].Name != "m.parse" || doc.Functions[0].Head.Self.Objects != 4 {
		t.Errorf("JSON (%v): %s", err, js.String())
	}
	if err := rep.Write(&html, "html"); err != nil || !strings.Contains(html.String(), "m.parse") || !strings.Contains(html.String(), "exact") {
		t.Errorf("HTML (%v) lacks the function or the word exact", err)
	}
	// Its flame graph is of bytes, m.parse marked regressed.
	if !strings.Contains(html.String(), `"unit":"bytes"`) || !regexp.MustCompile(`"marks":\{[^}]*"regressed"`).MatchString(html.String()) {
		t.Errorf("HTML: no flame graph of bytes with m.parse marked")
	}

	// A sampled heap profile is not exact: refused.
	base.Period = 512 * 1024
	if _, err := diff.AllocTableOf(base, 100, only); err == nil || !strings.Contains(err.Error(), "sampled") {
		t.Errorf("sampled profile: %v", err)
	}
}

// TestCompareAllocsCountedMoved: counted one by one, an object that moved
// from one function to another (m.run's allocation charged to m.parse in
// one process, as callgrind does in inlined code) is shown, not judged,
// since the run allocates as many objects as a whole (407 per 100
// iterations on both sides); one more object an iteration in m.parse,
// which the whole gains too, regresses.
func TestCompareAllocsCountedMoved(t *testing.T) {
	table := moduleTable(t)
	base := table(map[string][2]int64{"m.parse@10;m.run@3": {200, 0}, "m.run@4": {200, 0}, "runtime.malg@1": {7, 0}})
	moved := table(map[string][2]int64{"m.parse@10;m.run@3": {300, 0}, "m.run@4": {100, 0}, "runtime.malg@1": {7, 0}})
	more := table(map[string][2]int64{"m.parse@10;m.run@3": {300, 0}, "m.run@4": {200, 0}, "runtime.malg@1": {7, 0}})
	rep := diff.CompareAllocs(base, moved, "iteration", diff.CountedAllocTolerance)
	if rep.Failed() {
		t.Errorf("an object moved between functions failed: %+v", rep.Regressions())
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "moved between functions, shown, not judged: m.parse 2 -> 3") || !strings.Contains(rep.Notes[0], "4.07 -> 4.07 objects per iteration") {
		t.Errorf("notes %q: want the move said", rep.Notes)
	}
	// Not counted (a memory profile): the whole is not known exactly, and
	// m.parse regresses as before.
	if rep := diff.CompareAllocs(base, moved, "iteration", diff.DefaultAllocTolerance); !rep.Failed() {
		t.Errorf("sampled: the move did not fail")
	}
	// The whole grew by a third of an object an iteration (the runtime's
	// own allocations), m.parse by one moved from m.run: moved still.
	noisy := table(map[string][2]int64{"m.parse@10;m.run@3": {300, 0}, "m.run@4": {100, 0}, "runtime.malg@1": {40, 0}})
	if rep := diff.CompareAllocs(base, noisy, "iteration", diff.CountedAllocTolerance); rep.Failed() {
		t.Errorf("an object moved while the whole gained a third: %+v", rep.Regressions())
	}
	rep = diff.CompareAllocs(base, more, "iteration", diff.CountedAllocTolerance)
	if r := rep.Regressions(); len(r) != 1 || r[0].Name != "m.parse" || len(rep.Notes) != 0 {
		t.Errorf("one more object an iteration: regressions %+v, notes %q; want m.parse alone", r, rep.Notes)
	}
}

// moduleTable returns a maker of allocation tables of 100 iterations of
// the functions of module m from stacks (allocProfile's).
func moduleTable(t *testing.T) func(stacks map[string][2]int64) *diff.AllocTable {
	only := regexp.MustCompile(`^m\.`)
	return func(stacks map[string][2]int64) *diff.AllocTable {
		t.Helper()
		tab, err := diff.AllocTableOf(allocProfile(stacks), 100, only)
		if err != nil {
			t.Fatal(err)
		}
		return tab
	}
}

// TestCompareAllocsCountedOnce: counted, a function that allocates on one
// side only, within what a process allocates once (a cache filled in one
// process), is no news; one that allocates an object an iteration is.
func TestCompareAllocsCountedOnce(t *testing.T) {
	table := moduleTable(t)
	verdict := func(rep *diff.AllocReport, name string) diff.Verdict {
		for _, r := range rep.Rows {
			if r.Name == name {
				return r.Verdict
			}
		}
		return ""
	}
	base := table(map[string][2]int64{"m.run@4": {200, 0}})
	once := table(map[string][2]int64{"m.run@4": {200, 0}, "m.fill@2;m.run@4": {1, 0}})
	every := table(map[string][2]int64{"m.run@4": {200, 0}, "m.fill@2;m.run@4": {100, 0}})
	if v := verdict(diff.CompareAllocs(base, once, "iteration", diff.CountedAllocTolerance), "m.fill"); v != diff.Unchanged {
		t.Errorf("one object over 100 iterations, on the head only: %q, want unchanged", v)
	}
	if v := verdict(diff.CompareAllocs(once, base, "iteration", diff.CountedAllocTolerance), "m.fill"); v != diff.Unchanged {
		t.Errorf("one object over 100 iterations, on the base only: %q, want unchanged", v)
	}
	if rep := diff.CompareAllocs(base, every, "iteration", diff.CountedAllocTolerance); verdict(rep, "m.fill") != diff.Regressed || !rep.Failed() {
		t.Errorf("an object an iteration, new: %q, want regressed", verdict(rep, "m.fill"))
	}
	// On the stack of another's allocations only, on one side: no news.
	via := table(map[string][2]int64{"m.run@4": {200, 0}, "m.fill@2;m.mid@3;m.run@4": {1, 0}})
	if v := verdict(diff.CompareAllocs(base, via, "iteration", diff.CountedAllocTolerance), "m.mid"); v != diff.Unchanged {
		t.Errorf("none of its own, on the head's stacks only: %q, want unchanged", v)
	}
	deep := table(map[string][2]int64{"m.run@4": {200, 0}, "m.fill@2;m.mid@3;m.run@4": {100, 0}})
	if rep := diff.CompareAllocs(base, deep, "iteration", diff.CountedAllocTolerance); verdict(rep, "m.mid") != diff.Unchanged || verdict(rep, "m.fill") != diff.Regressed {
		t.Errorf("an object an iteration through m.mid: m.mid %q, m.fill %q; want m.fill alone regressed", verdict(rep, "m.mid"), verdict(rep, "m.fill"))
	}
	// A memory profile (sampled): named as before.
	if v := verdict(diff.CompareAllocs(base, once, "iteration", diff.DefaultAllocTolerance), "m.fill"); v != diff.New {
		t.Errorf("sampled, one object on the head only: %q, want new", v)
	}
}
