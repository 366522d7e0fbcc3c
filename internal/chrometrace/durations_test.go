package chrometrace

import (
	"path/filepath"
	"testing"

	"github.com/hotbudget/hotbudget/internal/pbuild"
)

const us = 1000 // ns

// TestDurationsCorpus pins the nesting and repair rules on speedscope's
// trace-event test files with values worked out by hand (in µs).
func TestDurationsCorpus(t *testing.T) {
	type ft struct{ self, total int64 }
	tests := []struct {
		file  string
		want  map[string]ft
		warns []string
	}{
		{"simple.json", map[string]ft{"alpha": {2, 14}, "beta": {7, 12}, "gamma": {5, 5}},
			[]string{"X events without dur dropped"}}, // epsilon has tdur only
		{"simple-partial.json", map[string]ft{"alpha": {2, 14}, "beta": {7, 12}, "gamma": {5, 5}},
			[]string{"not closed after 6 events"}},
		{"simple-partial-trailing-comma.json", map[string]ft{"alpha": {2, 14}, "beta": {7, 12}, "gamma": {5, 5}},
			[]string{"not closed after 6 events"}},
		{"simple-partial-whitespace.json", map[string]ft{"alpha": {2, 14}, "beta": {7, 12}, "gamma": {5, 5}},
			[]string{"not closed after 6 events"}},
		{"simple-object.json", map[string]ft{"alpha": {2, 14}, "beta": {12, 12}},
			[]string{"X events without dur dropped"}},
		// Sorted by ts: A 0-10 > B 1-9 > C 2-8.
		{"out-of-order.json", map[string]ft{"A": {2, 10}, "B": {2, 8}, "C": {6, 6}}, nil},
		// Sorted: B alpha 0, B beta 1, E alpha 9, E beta 10: E alpha closes
		// beta too (clipped), E beta then matches nothing.
		{"out-of-order-unbalanced-name.json", map[string]ft{"alpha": {1, 9}, "beta": {8, 8}},
			[]string{"closes 1 events opened after its B", "clipped at 9000ns", `E event "beta" at 10000ns matches no open B`}},
		{"unbalanced-name.json", map[string]ft{"alpha": {1, 9}, "beta": {8, 8}},
			[]string{"clipped at 9000ns", `E event "beta"`}},
		// beta is clipped at alpha's end.
		{"invalid-x-nesting.json", map[string]ft{"alpha": {5, 10}, "beta": {5, 5}},
			[]string{`"beta" open past the end of "alpha": clipped at 10000ns`}},
		{"too-many-end-events.json", map[string]ft{"alpha": {2, 14}, "beta": {12, 12}},
			[]string{`E event "gamma" at 5000ns matches no open B`, `E event "delta"`}},
		{"end-event-with-empty-stack.json", map[string]ft{"alpha": {1, 1}},
			[]string{`E event "beta" at 2000ns matches no open B`}},
		// E A closes B (clipped); Z then runs alone 10-11.
		{"end-non-top-of-stack.json", map[string]ft{"A": {1, 10}, "B": {9, 9}, "Z": {1, 1}},
			[]string{"closes 1 events opened after its B"}},
		// No E matches: both B events close at the last timestamp, 11.
		{"not-enough-end-events.json", map[string]ft{"A": {11, 11}},
			[]string{"2 B events never end"}},
		{"only-begin-events.json", map[string]ft{"A": {1, 2}, "B": {1, 1}, "C": {0, 0}},
			[]string{"3 B events never end", "last timestamp 2000ns"}},
		{"mismatched-name.json", map[string]ft{"alpha": {10, 10}},
			[]string{`E event "beta" at 10000ns matches no open B`, "1 B events never end"}},
		{"mismatched-args.json", map[string]ft{"A": {10, 10}}, nil},
		{"unbalanced-args.json", map[string]ft{"A": {10, 10}}, nil},
		// E C comes before B C at ts 2: a zero-length C, not a repair.
		{"zero-duration-events.json", map[string]ft{"A": {10, 10}, "B": {0, 0}, "C": {0, 0}, "D": {0, 0}}, nil},
		{"must-retain-original-order.json", map[string]ft{"A": {2, 6}, "B": {2, 4}, "C": {2, 2}, "X": {3, 3}}, nil},
		{"event-reordering-name-match.json", map[string]ft{"alpha": {9, 10}, "beta": {0, 1}, "gamma": {1, 1}}, nil},
		// At equal ts the longer X is the parent.
		{"x-events-matching-start.json", map[string]ft{"alpha": {12, 20}, "beta": {4, 6}, "gamma": {4, 6}}, nil},
		{"x-events-matching-end.json", map[string]ft{"alpha": {12, 20}, "beta": {4, 6}, "gamma": {4, 6}}, nil},
		// Equal ts and dur: file order decides the parent.
		{"matching-x.json", map[string]ft{"alpha": {8, 10}, "beta": {1, 2}, "gamma": {1, 2}}, nil},
		// A B at the same ts as an X is its parent.
		{"bex-interaction.json", map[string]ft{
			"A": {0, 2}, "B": {2, 2}, "C": {2, 2}, "D": {0, 2}, "E": {1, 1}, "F": {1, 2},
			"G": {1, 2}, "H": {1, 1}, "I": {1, 1}, "J": {1, 2}, "K": {1, 2}, "L": {1, 1}}, nil},
		{"simultaneous-anonymous-calls.json", map[string]ft{"anonymous": {5, 5}, "function1": {0, 2}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			p, err := parseFile(t, filepath.Join(corpus, "trace-event", tc.file), "")
			if err != nil {
				t.Fatal(err)
			}
			if !pbuild.IsExact(p) {
				t.Error("duration events should give an exact profile")
			}
			got := selfTotal(p)
			for name, w := range tc.want {
				g := got[name]
				if g.self != w.self*us || g.total != w.total*us {
					t.Errorf("%s: self %dns total %dns, want %dµs and %dµs", name, g.self, g.total, w.self, w.total)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("functions %q, want %d", names(got), len(tc.want))
			}
			checkWarnings(t, p, tc.warns)
		})
	}
}
