// Package budget reads performance budget files and checks profiles against
// them: per-function limits on self and total time or share of the profile,
// on allocations (objects and bytes, on heap and allocation profiles), and
// limits on regression against a baseline.
//
// A budget file is YAML or JSON (detected from the first character: '{' is
// JSON). Its whole schema, version 1:
//
//	version: 1                  # required; the only version so far
//	defaults:                   # optional; every rule inherits these keys
//	  thread: main              # keep only samples of this thread (name or tid)
//	  process: "4242"           # keep only samples of this process (name or pid)
//	  drop_synthetic: true      # drop (idle), (program), (garbage collector), (root)
//	  metric: self              # max_regression compares self (default) or total time
//	  mode: share               # ... as share of the profile (default) or absolute time
//	  assume: nothing           # ... with several runs a side: Mann-Whitney (nothing) or
//	                            # Welch's t-test (normal) instead of diff's model of
//	                            # counts, the default when assume is left out
//	rules:                      # required, at least one
//	  - function: main.parseRecords   # a function by its exact pprof name, or
//	    max_self: 200ms               # self time at most 200ms
//	    max_total_share: 70%          # total time at most 70% of the profile
//	  - match: '^crypto/'             # a regexp (Go syntax) on function names:
//	    max_self_share: 80%           # every matching function must keep the limits
//	  - function: main.render         # limits per unit of work (see below):
//	    max_self_per_op: 20µs         # self time per benchmark op or iteration
//	    max_total_per_op: 50µs        # total time per op
//	  - name: hashing stays flat      # an optional label for reports
//	    function: main.hashBlock
//	    max_regression: 10%           # vs the baseline (see below)
//	    allow_missing: true           # pass when the function is absent
//	    thread: worker                # rules may override every default
//	  - function: main.encode         # allocations, on heap and allocation profiles
//	                                  # (sample_type: inuse_space, as pprof's -sample_index,
//	                                  # picks another value than alloc_objects, alloc_space):
//	    max_allocs: 1000              # objects it allocates itself
//	    max_total_allocs: 5000        # objects it and everything it calls allocate
//	    max_alloc_bytes: 64KiB        # bytes it allocates itself
//	    max_total_alloc_bytes: 1.5MiB # bytes it and everything it calls allocate
//	  - function: main.parse          # counted instructions (perfassert.Instructions,
//	                                  # record --instructions, callgrind files):
//	    max_self_instructions_per_op: 2000000  # a count per op or iteration
//	    max_total_instructions: 9000000000     # a count in all
//
// Limits: max_self and max_total are Go durations with a unit ("20ms",
// "1.5s"); max_self_share and max_total_share are percentages of the
// profile's total time, from 0% to 100%; max_regression is a percentage
// increase. A bare number is refused: the unit says what it means. Every rule
// needs function or match (not both) and at least one limit.
//
// max_self_instructions, max_total_instructions and their _per_op forms
// are whole numbers of instructions, exact counts that need a profile of
// counted instructions; a time limit on such a profile is an error that
// names them.
//
// max_allocs and max_total_allocs are whole numbers of objects;
// max_alloc_bytes and max_total_alloc_bytes sizes with a unit (512B, 64KiB,
// 1.5MiB, GiB, TiB; kB, MB, GB, TB are powers of 1000). They read a Go heap
// or allocation profile (go test -memprofile, runtime/pprof's "heap" and
// "allocs") by its alloc_objects or alloc_space sample type (every
// allocation since the program started, not only those in use), or a V8
// sampling heap profile's bytes; sample_type picks another (inuse_space).
// A profile without such a sample type (a CPU profile) makes the check an
// error naming what it has. Self is what the function allocates as the
// leaf frame, total what it and its callees allocate, as for time. A
// profile sampled at Go's default rate (one allocation per 512 KiB) holds
// the runtime's estimates; the result warns so and says how many
// allocations were sampled: record with go test -memprofilerate=1 for
// exact counts. sample_type (in defaults or a rule, or hotbudget check
// --sample-index for the rules that name none) also picks the value the
// time limits read ("wall" instead of "cpu").
//
// max_self_per_op and max_total_per_op are durations too, per unit of work
// the profiles record in hotbudget's metadata: a benchmark op in profiles
// written by `hotbudget record` (b.N, the iterations it ran), an iteration
// in perfassert.Capture's. They do not depend on how long the profile ran
// (-benchtime), unlike max_self. The time of all the profiles is divided by
// the work of all of them; a profile that records no work count (one written
// by go test -cpuprofile, say) makes the check an error, and so do profiles
// that count different units.
//
// Semantics, decided once and pinned by tests:
//
//   - A limit is perfassert's check (a limits.Checker of the profiles, the
//     engine behind perfassert's assertions),
//     so that a budget line and the assertion that bounds the same
//     quantity are one check by construction, with one result and one
//     text: max_self is MaxSelfTime, max_total_share MaxTotalShare, the
//     per-op limits add PerIteration, and thread, process and
//     drop_synthetic are the rule's analysis.Selection (perfassert's
//     WithSelection). A Limit's Bound is the limits.Limit it checks; a
//     match rule adds limits.Regexp and limits.EachMatch, allow_missing
//     limits.AllowMissing. The message of a result is
//     limits.Result.Summary.
//   - Several profiles are runs of the same program: a time limit applies
//     to the mean time per run (a run without the function counts as
//     zero), a share limit to the share of all runs pooled, a per-op
//     limit to the time of all runs over the work of all runs.
//   - Functions are named as pprof names them (pkg.(*T).Method). A
//     function rule measures every function of that name (anonymous
//     JavaScript functions in different files share one), their samples
//     pooled: a sample through two of them counts once.
//   - A match rule judges each function name it matches on its own, as a
//     function rule would, and reports the worst (limits.EachMatch):
//     every matching function must keep the limit. (An assertion with a
//     regular expression, without EachMatch, pools the matches instead.)
//   - A selector that matches no function fails, naming the closest
//     functions, unless allow_missing is true. A rule never passes vacuously.
//   - max_regression uses package diff with its default statistics, the
//     rule's metric and mode, and the rule's limit as the smallest relative
//     change that counts: the rule fails when diff judges a matching function
//     Regressed, i.e. the change is both significant and above the limit. A
//     function new in the profiles passes with a note; it has no baseline.
//     Profiles of exact counts on both sides (marked exact, their value a
//     count: perfassert.Instructions, record --instructions, callgrind
//     files) are judged as counts instead (diff.CompareCounts): each
//     function's self count per iteration, never its share with a minimum
//     change, fails when diff judges it Regressed and it grew by more than
//     the limit; a count below zero on a side is shown, never judged.
//
// Errors in a budget file are reported as "file:line: what is wrong", all of
// them at once. Unknown keys, duplicate keys, wrong types and malformed
// durations or percentages are errors.
package budget

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/limits"
	"go.yaml.in/yaml/v3"
)

// Budget is a parsed budget file.
type Budget struct {
	// Name is the file name given to Parse, used in messages.
	Name    string
	Version int
	Rules   []Rule
}

// Rule is one entry of a budget's rules, with the defaults applied.
type Rule struct {
	Line int    // line of the rule in the budget file
	Name string // optional label

	// Function is an exact function name; Match a pattern. Exactly one is set.
	Function string
	Match    *regexp.Regexp

	// Selection says which samples the rule's limits count: the file's
	// thread, process and drop_synthetic keys set Threads, Processes and
	// DropSynthetic. It is the analysis.Selection perfassert and diff
	// take (WithSelection). ToCaller, which a file cannot set, is used as
	// it is by every limit, max_regression included: unlike hotbudget
	// diff, a budget does not charge runtime.asyncPreempt to its caller
	// unless the Rule says so, so that one function has one share in all
	// the lines of a budget.
	Selection    analysis.Selection
	AllowMissing bool

	// Metric and Mode are what max_regression compares; Assume picks its
	// test for several runs a side.
	Metric diff.Metric
	Mode   diff.Mode
	Assume diff.Assumption

	Limits []Limit
}

// selector returns the rule's function name, or its pattern between slashes.
func (r *Rule) selector() string {
	if r.Match != nil {
		return "/" + r.Match.String() + "/"
	}
	return r.Function
}

// Limit is one bound of a rule, in package limits' vocabulary: the
// quantity a key bounds is a limits.Quantity, so that a budget line and
// the perfassert assertion of the same bound are one check.
type Limit struct {
	// Bound is the limit as limits.Check and perfassert's assertions take
	// it: max_self is a limits.SelfTime bound (Bound.Time), max_total
	// limits.TotalTime, max_self_share and max_total_share
	// limits.SelfShare and limits.TotalShare (Bound.Share), max_allocs,
	// max_total_allocs, max_alloc_bytes and max_total_alloc_bytes
	// limits.SelfAllocs, limits.TotalAllocs, limits.SelfAllocBytes and
	// limits.TotalAllocBytes (Bound.Count). It is zero for max_regression.
	Bound limits.Limit
	// PerIteration makes a time Bound per unit of work
	// (max_self_per_op, max_total_per_op), as limits.PerIteration does.
	PerIteration bool
	// Regression is max_regression's limit: the smallest relative
	// increase that fails (0.10 = +10%).
	Regression float64
	Line       int // line of the limit in the budget file
}

// limitKeys are the keys of a budget file's limits, with the bound each
// sets: the one place the file's words meet package limits' quantities.
var limitKeys = []struct {
	key   string
	q     limits.Quantity // empty: max_regression
	perOp bool
	unit  string // of RuleResult.Got and Limit
}{
	{"max_self", limits.SelfTime, false, "ns"},
	{"max_total", limits.TotalTime, false, "ns"},
	{"max_self_share", limits.SelfShare, false, "share"},
	{"max_total_share", limits.TotalShare, false, "share"},
	{"max_regression", "", false, "relative"},
	{"max_self_per_op", limits.SelfTime, true, "ns/op"},
	{"max_total_per_op", limits.TotalTime, true, "ns/op"},
	{"max_allocs", limits.SelfAllocs, false, "objects"},
	{"max_total_allocs", limits.TotalAllocs, false, "objects"},
	{"max_alloc_bytes", limits.SelfAllocBytes, false, "bytes"},
	{"max_total_alloc_bytes", limits.TotalAllocBytes, false, "bytes"},
	{"max_self_instructions", limits.SelfInstructions, false, "instructions"},
	{"max_total_instructions", limits.TotalInstructions, false, "instructions"},
	{"max_self_instructions_per_op", limits.SelfInstructions, true, "instructions/op"},
	{"max_total_instructions_per_op", limits.TotalInstructions, true, "instructions/op"},
	{"max_self_cycles", limits.SelfCycles, false, "cycles"},
	{"max_total_cycles", limits.TotalCycles, false, "cycles"},
	{"max_self_cycles_per_op", limits.SelfCycles, true, "cycles/op"},
	{"max_total_cycles_per_op", limits.TotalCycles, true, "cycles/op"},
}

// key is the budget file's key of l ("max_self") and the unit of its
// value and result: "ns", "ns/op", "share", "objects", "bytes",
// "instructions", "instructions/op", "cycles", "cycles/op" or
// "relative".
func (l Limit) key() (key, unit string) {
	for _, k := range limitKeys {
		if k.q == l.Bound.Quantity && k.perOp == l.PerIteration {
			return k.key, k.unit
		}
	}
	return "", ""
}

// value is l's bound in its unit (RuleResult.Limit).
func (l Limit) value() float64 {
	switch _, unit := l.key(); unit {
	case "ns", "ns/op":
		return float64(l.Bound.Time)
	case "share":
		return l.Bound.Share
	case "objects", "bytes", "instructions", "instructions/op":
		return float64(l.Bound.Count)
	}
	return l.Regression
}

// maxFileSize bounds a budget file.
const maxFileSize = 1 << 20

// Load reads and parses the budget file at path; errors name the path.
func Load(path string) (*Budget, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse reads a budget file. name is used in error messages, which have the
// form "name:line: what is wrong" (several joined by newlines).
func Parse(name string, data []byte) (*Budget, error) {
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s: budget file larger than %d bytes", name, maxFileSize)
	}
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%s: empty budget file", name)
	}
	var root *yaml.Node
	var err error
	if trimmed[0] == '{' {
		root, err = jsonNode(data)
	} else {
		root, err = yamlNode(data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s:%w", name, err)
	}
	v := &validator{name: name}
	b := v.budget(root)
	if len(v.errs) > 0 {
		idx := make([]int, len(v.errs))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(i, j int) bool { return v.lines[idx[i]] < v.lines[idx[j]] })
		errs := make([]error, len(idx))
		for i, k := range idx {
			errs[i] = v.errs[k]
		}
		return nil, errors.Join(errs...)
	}
	b.Name = name
	return b, nil
}
