package perfassert

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hotbudget/hotbudget/analysis"
)

// String is the result as a test failure (or log) message: the check, the
// profile and the function, got before want with units, the share of the
// total, then the top functions and the heaviest stacks for context. The
// text is for people and may change between versions; it is deterministic.
func (r *Result) String() string {
	var b strings.Builder
	what := fmt.Sprintf("%q", r.Selector)
	if r.Regexp {
		what = "regexp " + what
	}
	fmt.Fprintf(&b, "perfassert.%s: %s: ", r.Check, r.Profile)
	if r.Missing {
		if r.Regexp {
			fmt.Fprintf(&b, "no function matches %s", what)
		} else {
			fmt.Fprintf(&b, "no function named %s", what)
		}
		fmt.Fprintf(&b, " among %d functions (%s total, %d samples)", r.Functions, fmtDur(r.Total), r.TotalSamples)
		if r.Passed {
			b.WriteString("; allowed by AllowMissing")
		}
		b.WriteString("\n")
		if len(r.Suggestions) > 0 {
			b.WriteString("did you mean:\n")
			for _, s := range r.Suggestions {
				fmt.Fprintf(&b, "    %s\n", s)
			}
		}
	} else {
		name := r.Selector
		if r.Regexp || len(r.Matched) > 1 {
			name = fmt.Sprintf("%d functions matching %s", len(r.Matched), what)
		}
		perRun := ""
		if r.Iterations > 0 {
			perRun = " per run"
		}
		fmt.Fprintf(&b, "%s %s %s%s (%s of %s total", name, r.Limit.Quantity.metric(), fmtDur(r.Time), perRun, fmtShare(r.Share), fmtDur(r.Total))
		if r.Iterations > 0 {
			fmt.Fprintf(&b, " over %d runs", r.Iterations)
		}
		if r.Exact {
			b.WriteString(", exact")
		} else {
			fmt.Fprintf(&b, ", %d samples", r.Samples)
		}
		b.WriteString(")")
		if r.Limit.Quantity.isShare() {
			fmt.Fprintf(&b, ", share %s", fmtShare(r.Share))
		}
		switch {
		case r.SkippedRace:
			fmt.Fprintf(&b, ", over %s but not checked: the race detector is on (SkipUnderRace)\n", r.Limit)
		case r.Passed:
			fmt.Fprintf(&b, ", within %s (%s of the limit)\n", r.Limit, fmtShare(r.used()))
		default:
			fmt.Fprintf(&b, ", want at most %s\n", r.Limit)
		}
		if len(r.Matched) > 1 {
			b.WriteString("matched:\n")
			for i, f := range r.Matched {
				if i == topN {
					fmt.Fprintf(&b, "    ... and %d more\n", len(r.Matched)-topN)
					break
				}
				fmt.Fprintf(&b, "    %s (self %s, total %s)\n", f.Name, fmtDur(f.Self), fmtDur(f.Total))
			}
		}
	}
	if len(r.Top) > 0 && !r.Passed {
		metric := "self"
		if !r.Limit.Quantity.isSelf() {
			metric = "total"
		}
		fmt.Fprintf(&b, "top functions by %s time:\n", metric)
		fmt.Fprintf(&b, "    %10s %6s %10s %6s  %s\n", "self", "self%", "total", "total%", "function")
		for _, f := range r.Top {
			fmt.Fprintf(&b, "    %10s %6s %10s %6s  %s\n", fmtDur(f.Self), fmtShare(f.SelfShare), fmtDur(f.Total), fmtShare(f.TotalShare), f.Name)
		}
	}
	if len(r.Stacks) > 0 && !r.Passed {
		b.WriteString("heaviest stacks (leaf first):\n")
		for _, s := range r.Stacks {
			fmt.Fprintf(&b, "    %10s %6s  %s\n", fmtDur(s.Time), fmtShare(s.Share), fmtStack(s.Frames, max(s.Through+3, 4)))
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// used is the measured value as a fraction of the limit.
func (r *Result) used() float64 {
	if r.Limit.Quantity.isShare() {
		if r.Limit.Share == 0 {
			return 0 // passed: nothing measured
		}
		return r.Share / r.Limit.Share
	}
	if r.Limit.Time == 0 {
		return 0
	}
	return float64(r.Time) / float64(r.Limit.Time)
}

// metric is the word for the measured time in failure text.
func (q Quantity) metric() string {
	if q.isSelf() {
		return "self time"
	}
	return "total time"
}

func fmtStack(frames []string, max int) string {
	if len(frames) <= max+1 {
		return strings.Join(frames, " <- ")
	}
	return strings.Join(frames[:max], " <- ") + fmt.Sprintf(" <- ... (%d more)", len(frames)-max)
}

// fmtDur prints d with three significant digits: 1.23s, 45.6ms, 500µs.
func fmtDur(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	a := d
	if a < 0 {
		a = -a
	}
	unit := time.Duration(1)
	for a/unit >= 1000 {
		unit *= 10
	}
	return d.Round(unit).String()
}

func fmtShare(s float64) string { return fmt.Sprintf("%.1f%%", s*100) }

// suggest returns up to n function names close to the selector: names that
// contain it (or whose last element it contains), ignoring case, then names
// within a small edit distance of it, heaviest first within each group.
func suggest(sel string, isRegexp bool, fs []analysis.Function, n int) []string {
	if isRegexp {
		sel = strings.Map(func(r rune) rune {
			if strings.ContainsRune(`\^$*+?()[]{}|`, r) {
				return -1
			}
			return r
		}, sel)
	}
	want := strings.ToLower(sel)
	wantShort := shortName(want)
	type cand struct {
		name  string
		class int
		dist  int
		self  time.Duration
	}
	seen := make(map[string]bool)
	var cs []cand
	for _, f := range fs {
		if seen[f.Name] {
			continue
		}
		seen[f.Name] = true
		name := strings.ToLower(f.Name)
		short := shortName(name)
		c := cand{name: f.Name, self: f.Self}
		switch {
		case want == "":
			continue
		case name == want:
			c.class = 0
		case strings.Contains(name, want) || (len(short) >= 3 && strings.Contains(want, short)) || strings.Contains(short, wantShort):
			c.class, c.dist = 1, abs(len(name)-len(want))
		default:
			d := editDistance(wantShort, short)
			if d > max(2, len(wantShort)/3) {
				continue
			}
			c.class, c.dist = 2, d
		}
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.class != b.class {
			return a.class < b.class
		}
		if a.dist != b.dist {
			return a.dist < b.dist
		}
		if a.self != b.self {
			return a.self > b.self
		}
		return a.name < b.name
	})
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// shortName is a function name without its package path: the part after the
// last slash ("example.com/m/pkg.(*T).Run" -> "pkg.(*T).Run").
func shortName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// editDistance is the Levenshtein distance of a and b in bytes, over at most
// the first 128 bytes of each so that its cost stays bounded.
func editDistance(a, b string) int {
	const limit = 128
	if len(a) > limit {
		a = a[:limit]
	}
	if len(b) > limit {
		b = b[:limit]
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
