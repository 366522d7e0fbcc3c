package budget

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/limits"
	"go.yaml.in/yaml/v3"
)

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
		"max_self", "max_total", "max_self_share", "max_total_share", "max_regression",
		"max_self_per_op", "max_total_per_op", "sample_type",
		"max_allocs", "max_total_allocs", "max_alloc_bytes", "max_total_alloc_bytes",
		"max_self_instructions", "max_total_instructions", "max_self_instructions_per_op", "max_total_instructions_per_op")
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
		for _, lk := range limitKeys {
			if lk.key != k {
				continue
			}
			l := Limit{Bound: limits.Limit{Quantity: lk.q}, PerIteration: lk.perOp, Line: x.Line}
			ok := false
			switch lk.unit {
			case "ns", "ns/op":
				l.Bound.Time, ok = v.duration(x, k)
			case "share":
				l.Bound.Share, ok = v.percent(x, k, true)
			case "relative":
				l.Regression, ok = v.percent(x, k, false)
			case "objects", "instructions", "instructions/op":
				l.Bound.Count, ok = v.count(x, k, lk.unit)
			case "bytes":
				l.Bound.Count, ok = v.bytes(x, k)
			}
			if ok {
				r.Limits = append(r.Limits, l)
			}
		}
	}
	if len(r.Limits) == 0 && len(v.errs) == before {
		v.errorf(n, "%s: no limit: give at least one of max_self, max_total, max_self_share, max_total_share, max_self_per_op, max_total_per_op, max_regression, max_allocs, max_total_allocs, max_alloc_bytes, max_total_alloc_bytes, max_self_instructions, max_total_instructions, max_self_instructions_per_op, max_total_instructions_per_op", what)
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

// count reads a number of objects or instructions (what): a whole number,
// not negative.
func (v *validator) count(n *yaml.Node, key, what string) (int64, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		c, err := strconv.ParseInt(n.Value, 0, 64)
		if err == nil && c >= 0 {
			return c, true
		}
	}
	v.errorf(n, "%s must be a whole number of %s such as 12, got %s", key, strings.TrimSuffix(what, "/op"), describe(n))
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
