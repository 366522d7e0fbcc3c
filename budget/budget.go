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
//	  assume: nothing           # ... with several runs a side: Mann-Whitney (nothing,
//	                            # default) or Welch's t-test (normal); see package diff
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
//
// Limits: max_self and max_total are Go durations with a unit ("20ms",
// "1.5s"); max_self_share and max_total_share are percentages of the
// profile's total time, from 0% to 100%; max_regression is a percentage
// increase. A bare number is refused: the unit says what it means. Every rule
// needs function or match (not both) and at least one limit.
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
//     WithSelection). Assertion gives the check a limit makes; the
//     message of a result is limits.Result.Summary.
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
//
// Errors in a budget file are reported as "file:line: what is wrong", all of
// them at once. Unknown keys, duplicate keys, wrong types and malformed
// durations or percentages are errors.
package budget

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
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
	// take. ToCaller, which a file cannot set, is used as it is by the
	// limits; max_regression charges runtime.asyncPreempt to its caller
	// when it is nil, as hotbudget diff does.
	Selection    analysis.Selection
	AllowMissing bool

	// Metric and Mode are what max_regression compares; Assume picks its
	// test for several runs a side.
	Metric diff.Metric
	Mode   diff.Mode
	Assume diff.Assumption

	Limits []Limit
}

// Selector returns the rule's function name, or its pattern between slashes.
func (r *Rule) Selector() string {
	if r.Match != nil {
		return "/" + r.Match.String() + "/"
	}
	return r.Function
}

// Kind names a limit, as it is spelled in the budget file.
type Kind string

// The kinds of limit.
const (
	MaxSelf       Kind = "max_self"         // Value in nanoseconds
	MaxTotal      Kind = "max_total"        // Value in nanoseconds
	MaxSelfShare  Kind = "max_self_share"   // Value a fraction in [0,1]
	MaxTotalShare Kind = "max_total_share"  // Value a fraction in [0,1]
	MaxRegression Kind = "max_regression"   // Value a relative change (0.10 = +10%)
	MaxSelfPerOp  Kind = "max_self_per_op"  // Value in nanoseconds per unit of work
	MaxTotalPerOp Kind = "max_total_per_op" // Value in nanoseconds per unit of work

	// Allocation limits, on heap and allocation profiles: what a function
	// allocates itself (as the leaf frame) or with everything it calls.
	MaxAllocs          Kind = "max_allocs"            // Value in objects
	MaxTotalAllocs     Kind = "max_total_allocs"      // Value in objects
	MaxAllocBytes      Kind = "max_alloc_bytes"       // Value in bytes
	MaxTotalAllocBytes Kind = "max_total_alloc_bytes" // Value in bytes
)

// Limit is one bound of a rule.
type Limit struct {
	Kind  Kind
	Value float64 // nanoseconds or fraction, see Kind
	Line  int
}

// Unit returns "ns" for time limits, "ns/op" for time per unit of work,
// "share" for shares, "objects" and "bytes" for allocation limits and
// "relative" for regressions: the unit of Value and of a result's Got.
func (k Kind) Unit() string {
	switch k {
	case MaxAllocs, MaxTotalAllocs:
		return "objects"
	case MaxAllocBytes, MaxTotalAllocBytes:
		return "bytes"
	case MaxSelf, MaxTotal:
		return "ns"
	case MaxSelfPerOp, MaxTotalPerOp:
		return "ns/op"
	case MaxSelfShare, MaxTotalShare:
		return "share"
	}
	return "relative"
}

// MaxFileSize bounds a budget file.
const MaxFileSize = 1 << 20

// Load reads and parses the budget file at path; errors name the path.
func Load(path string) (*Budget, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse reads a budget file. name is used in error messages, which have the
// form "name:line: what is wrong" (several joined by newlines).
func Parse(name string, data []byte) (*Budget, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: budget file larger than %d bytes", name, MaxFileSize)
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

// lineError is a syntax error at a line; Error gives "line: msg" so that Parse
// prefixes the file name.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("%d: %s", e.line, e.msg) }

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func yamlNode(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, &lineError{1, "empty budget file"}
		}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			n, _ := strconv.Atoi(m[1])
			return nil, &lineError{n, "invalid YAML: " + m[2]}
		}
		return nil, &lineError{1, "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var next yaml.Node
	if err := dec.Decode(&next); err != io.EOF {
		line := next.Line
		if line == 0 {
			line = 1
		}
		return nil, &lineError{line, "a budget file holds one YAML document"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &lineError{1, "empty budget file"}
	}
	return doc.Content[0], nil
}

// maxJSONDepth bounds nesting in a JSON budget (the schema needs 4).
const maxJSONDepth = 16

// jsonNode reads JSON into the same node tree yaml.v3 builds, with line
// numbers computed from the decoder's offsets, streaming token by token.
func jsonNode(data []byte) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	lines := lineCounter{data: data, line: 1}
	start := func() int {
		off := int(dec.InputOffset())
		for off < len(data) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
			off++
		}
		return lines.at(off)
	}
	var stack []*yaml.Node
	var root *yaml.Node
	for {
		line := start()
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return nil, &lineError{lines.at(int(se.Offset)), "invalid JSON: " + se.Error()}
			}
			return nil, &lineError{line, "invalid JSON: " + err.Error()}
		}
		var n *yaml.Node
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= maxJSONDepth {
					return nil, &lineError{line, fmt.Sprintf("JSON nested deeper than %d levels", maxJSONDepth)}
				}
				kind := yaml.MappingNode
				if t == '[' {
					kind = yaml.SequenceNode
				}
				n = &yaml.Node{Kind: kind, Line: line}
			default:
				stack = stack[:len(stack)-1]
				continue
			}
		case string:
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t, Line: line}
		case json.Number:
			tag := "!!int"
			if strings.ContainsAny(string(t), ".eE") {
				tag = "!!float"
			}
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(t), Line: line}
		case bool:
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t), Line: line}
		case nil:
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: line}
		}
		if len(stack) == 0 {
			if root != nil {
				return nil, &lineError{line, "invalid JSON: more than one value"}
			}
			root = n
		} else {
			parent := stack[len(stack)-1]
			parent.Content = append(parent.Content, n)
		}
		if n.Kind != yaml.ScalarNode {
			stack = append(stack, n)
		}
	}
	if root == nil {
		return nil, &lineError{1, "empty budget file"}
	}
	return root, nil
}

// lineCounter turns increasing byte offsets into 1-based line numbers.
type lineCounter struct {
	data      []byte
	off, line int
}

func (c *lineCounter) at(off int) int {
	off = min(off, len(c.data))
	if off < c.off { // offsets only grow, except in syntax errors
		c.off, c.line = 0, 1
	}
	c.line += bytes.Count(c.data[c.off:off], []byte("\n"))
	c.off = off
	return c.line
}

// validator turns a node tree into a Budget, collecting every error.
type validator struct {
	name  string
	errs  []error
	lines []int // line of each error, to report them in file order
}

// maxErrors bounds how many errors Parse reports.
const maxErrors = 20

func (v *validator) errorf(n *yaml.Node, format string, args ...any) {
	if len(v.errs) == maxErrors {
		v.errs = append(v.errs, fmt.Errorf("%s: too many errors", v.name))
		v.lines = append(v.lines, math.MaxInt)
	}
	if len(v.errs) > maxErrors {
		return
	}
	v.errs = append(v.errs, fmt.Errorf("%s:%d: %s", v.name, n.Line, fmt.Sprintf(format, args...)))
	v.lines = append(v.lines, n.Line)
}

// fields checks that n is a mapping with only the allowed keys and no
// duplicates, and returns key → value node in order of appearance.
func (v *validator) fields(n *yaml.Node, what string, allowed ...string) (map[string]*yaml.Node, []string) {
	if n.Kind == yaml.AliasNode {
		v.errorf(n, "%s: YAML aliases are not supported in budget files", what)
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		v.errorf(n, "%s must be a mapping of keys to values, got %s", what, describe(n))
		return nil, nil
	}
	out := make(map[string]*yaml.Node)
	var order []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			v.errorf(k, "%s: keys must be plain strings", what)
			continue
		}
		if val.Kind == yaml.AliasNode {
			v.errorf(val, "%s: YAML aliases are not supported in budget files", k.Value)
			continue
		}
		if _, dup := out[k.Value]; dup {
			v.errorf(k, "%s: duplicate key %q", what, k.Value)
			continue
		}
		known := false
		for _, a := range allowed {
			if a == k.Value {
				known = true
				break
			}
		}
		if !known {
			v.errorf(k, "%s: unknown key %q (known keys: %s)", what, k.Value, strings.Join(allowed, ", "))
			continue
		}
		out[k.Value] = val
		order = append(order, k.Value)
	}
	return out, order
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an alias"
}

func (v *validator) budget(root *yaml.Node) *Budget {
	b := &Budget{}
	f, _ := v.fields(root, "budget", "version", "defaults", "rules")
	if f == nil {
		return b
	}
	if n, ok := f["version"]; !ok {
		v.errorf(root, "missing version (write version: 1)")
	} else if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Value != "1" {
		v.errorf(n, "version must be 1, got %s", describe(n))
	} else {
		b.Version = 1
	}
	def := Rule{Metric: diff.DefaultSettings().Metric, Mode: diff.DefaultSettings().Mode, Assume: diff.DefaultSettings().Assume}
	if n, ok := f["defaults"]; ok {
		df, _ := v.fields(n, "defaults", "thread", "process", "drop_synthetic", "metric", "mode", "assume", "sample_type")
		v.common(df, &def)
	}
	n, ok := f["rules"]
	switch {
	case !ok:
		v.errorf(root, "missing rules: a budget needs at least one rule")
	case n.Kind != yaml.SequenceNode:
		v.errorf(n, "rules must be a list, got %s", describe(n))
	case len(n.Content) == 0:
		v.errorf(n, "rules is empty: a budget needs at least one rule")
	default:
		for i, rn := range n.Content {
			if r, ok := v.rule(rn, i+1, def); ok {
				b.Rules = append(b.Rules, r)
			}
		}
	}
	return b
}

// common reads the keys rules share with defaults.
func (v *validator) common(f map[string]*yaml.Node, r *Rule) {
	if n, ok := f["thread"]; ok {
		r.Selection.Threads = []string{v.ident(n, "thread")}
	}
	if n, ok := f["process"]; ok {
		r.Selection.Processes = []string{v.ident(n, "process")}
	}
	if n, ok := f["drop_synthetic"]; ok {
		r.Selection.DropSynthetic = v.boolean(n, "drop_synthetic")
	}
	if n, ok := f["sample_type"]; ok {
		if r.Selection.SampleType = v.str(n, "sample_type"); r.Selection.SampleType == "" && n.Tag == "!!str" {
			v.errorf(n, "sample_type must not be empty")
		}
	}
	if n, ok := f["metric"]; ok {
		r.Metric = diff.Metric(v.oneOf(n, "metric", string(r.Metric), string(diff.Self), string(diff.Total)))
	}
	if n, ok := f["mode"]; ok {
		r.Mode = diff.Mode(v.oneOf(n, "mode", string(r.Mode), string(diff.Share), string(diff.Absolute)))
	}
	if n, ok := f["assume"]; ok {
		r.Assume = diff.Assumption(v.oneOf(n, "assume", string(r.Assume), string(diff.AssumeNothing), string(diff.AssumeNormal)))
	}
}

// oneOf reads a string that must be one of allowed; otherwise it records
// an error and returns old.
func (v *validator) oneOf(n *yaml.Node, key, old string, allowed ...string) string {
	s := v.str(n, key)
	if slices.Contains(allowed, s) {
		return s
	}
	if s != "" {
		v.errorf(n, "%s must be %s or %s, got %q", key, strings.Join(allowed[:len(allowed)-1], ", "), allowed[len(allowed)-1], s)
	}
	return old
}

func (v *validator) rule(n *yaml.Node, index int, def Rule) (Rule, bool) {
	r := def
	r.Line = n.Line
	r.Limits = nil
	r.Selection.Threads = slices.Clone(def.Selection.Threads)
	r.Selection.Processes = slices.Clone(def.Selection.Processes)
	what := fmt.Sprintf("rule %d", index)
	f, order := v.fields(n, what, "name", "function", "match", "thread", "process", "drop_synthetic",
		"allow_missing", "metric", "mode", "assume",
		string(MaxSelf), string(MaxTotal), string(MaxSelfShare), string(MaxTotalShare), string(MaxRegression),
		string(MaxSelfPerOp), string(MaxTotalPerOp), "sample_type",
		string(MaxAllocs), string(MaxTotalAllocs), string(MaxAllocBytes), string(MaxTotalAllocBytes))
	if f == nil {
		return r, false
	}
	before := len(v.errs)
	v.common(f, &r)
	if x, ok := f["name"]; ok {
		r.Name = v.str(x, "name")
	}
	if x, ok := f["allow_missing"]; ok {
		r.AllowMissing = v.boolean(x, "allow_missing")
	}
	fn, hasFn := f["function"]
	m, hasMatch := f["match"]
	switch {
	case hasFn && hasMatch:
		v.errorf(m, "%s: give function or match, not both", what)
	case hasFn:
		if r.Function = v.str(fn, "function"); r.Function == "" && fn.Tag == "!!str" {
			v.errorf(fn, "function must not be empty")
		}
	case hasMatch:
		if s := v.str(m, "match"); s != "" {
			re, err := regexp.Compile(s)
			if err != nil {
				v.errorf(m, "match: %v", err)
			} else {
				r.Match = re
			}
		} else if m.Tag == "!!str" {
			v.errorf(m, "match must not be empty")
		}
	default:
		v.errorf(n, "%s: needs function (an exact name) or match (a regexp)", what)
	}
	for _, k := range order {
		x := f[k]
		switch Kind(k) {
		case MaxSelf, MaxTotal, MaxSelfPerOp, MaxTotalPerOp:
			if d, ok := v.duration(x, k); ok {
				r.Limits = append(r.Limits, Limit{Kind: Kind(k), Value: float64(d), Line: x.Line})
			}
		case MaxSelfShare, MaxTotalShare, MaxRegression:
			if p, ok := v.percent(x, k, Kind(k) != MaxRegression); ok {
				r.Limits = append(r.Limits, Limit{Kind: Kind(k), Value: p, Line: x.Line})
			}
		case MaxAllocs, MaxTotalAllocs:
			if c, ok := v.count(x, k); ok {
				r.Limits = append(r.Limits, Limit{Kind: Kind(k), Value: float64(c), Line: x.Line})
			}
		case MaxAllocBytes, MaxTotalAllocBytes:
			if b, ok := v.bytes(x, k); ok {
				r.Limits = append(r.Limits, Limit{Kind: Kind(k), Value: float64(b), Line: x.Line})
			}
		}
	}
	if len(r.Limits) == 0 && len(v.errs) == before {
		v.errorf(n, "%s: no limit: give at least one of max_self, max_total, max_self_share, max_total_share, max_self_per_op, max_total_per_op, max_regression, max_allocs, max_total_allocs, max_alloc_bytes, max_total_alloc_bytes", what)
	}
	return r, len(v.errs) == before
}

func (v *validator) str(n *yaml.Node, key string) string {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		v.errorf(n, "%s must be a string, got %s", key, describe(n))
		return ""
	}
	return n.Value
}

// ident reads a thread or process: a name or a numeric id.
func (v *validator) ident(n *yaml.Node, key string) string {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!str") && n.Value != "" {
		return n.Value
	}
	v.errorf(n, "%s must be a name or an id, got %s", key, describe(n))
	return ""
}

func (v *validator) boolean(n *yaml.Node, key string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		v.errorf(n, "%s must be true or false, got %s", key, describe(n))
		return false
	}
	return n.Value == "true"
}

func (v *validator) duration(n *yaml.Node, key string) (time.Duration, bool) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		v.errorf(n, "%s: %s has no unit: write a duration such as %sms", key, n.Value, n.Value)
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		v.errorf(n, "%s must be a duration such as 20ms, got %s", key, describe(n))
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		v.errorf(n, "%s: %q is not a duration (write e.g. 20ms, 1.5s)", key, n.Value)
		return 0, false
	}
	if d < 0 {
		v.errorf(n, "%s: %q is negative", key, n.Value)
		return 0, false
	}
	return d, true
}

// count reads a number of objects: a whole number, not negative.
func (v *validator) count(n *yaml.Node, key string) (int64, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		c, err := strconv.ParseInt(n.Value, 0, 64)
		if err == nil && c >= 0 {
			return c, true
		}
	}
	v.errorf(n, "%s must be a whole number of objects such as 12, got %s", key, describe(n))
	return 0, false
}

var bytesRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?) ?(B|KiB|MiB|GiB|TiB|kB|KB|MB|GB|TB)$`)

// bytes reads a size with its unit: 512B, 4KiB, 1.5MiB (binary) or 2MB
// (decimal); a bare number is refused, as for durations.
func (v *validator) bytes(n *yaml.Node, key string) (int64, bool) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		v.errorf(n, "%s: %s has no unit: write a size such as %sB or %sKiB", key, n.Value, n.Value, n.Value)
		return 0, false
	}
	m := bytesRE.FindStringSubmatch(strings.TrimSpace(n.Value))
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || m == nil {
		v.errorf(n, "%s must be a size such as 512B, 4KiB or 1.5MiB, got %s", key, describe(n))
		return 0, false
	}
	x, err := strconv.ParseFloat(m[1], 64)
	scale := map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
		"kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}[m[2]]
	b := math.Round(x * scale)
	if err != nil || b > 1<<62 {
		v.errorf(n, "%s: %q is too large", key, n.Value)
		return 0, false
	}
	return int64(b), true
}

var percentRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?%$`)

func (v *validator) percent(n *yaml.Node, key string, share bool) (float64, bool) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		v.errorf(n, "%s: %s has no unit: write a percentage such as %s%%", key, n.Value, n.Value)
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || !percentRE.MatchString(strings.TrimSpace(n.Value)) {
		v.errorf(n, "%s must be a percentage such as 5%%, got %s", key, describe(n))
		return 0, false
	}
	p, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(n.Value), "%"), 64)
	if err != nil || math.IsInf(p, 0) {
		v.errorf(n, "%s: %q is not a percentage", key, n.Value)
		return 0, false
	}
	if share && p > 100 {
		v.errorf(n, "%s: %q is more than 100%% of the profile", key, n.Value)
		return 0, false
	}
	return p / 100, true
}
