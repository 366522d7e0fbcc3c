package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/modname"
	"github.com/hotbudget/hotbudget/internal/suggest"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/loaders"
)

// countedSides reports whether the profiles of both sides are exact counts
// (instructions counted by perfassert.Instructions or record
// --instructions, callgrind files): they are judged as counts
// (diff.CompareCounts), never as shares with a minimum change. Some counted
// and some sampled is an error naming a file of each.
func countedSides(sides [][]*analysis.Index, paths [][]string) (bool, error) {
	var counted, sampled string
	for i, side := range sides {
		files, _ := expandGlobs(paths[i])
		for j, x := range side {
			name := ""
			if j < len(files) {
				name = files[j]
			}
			ix := (*indexload.Index)(x).Index()
			if ix.Facts.Exact && len(ix.Types) > 0 && ix.Types[0].Unit == "count" {
				counted = name
			} else {
				sampled = name
			}
		}
	}
	if counted != "" && sampled != "" {
		return false, fmt.Errorf("%s holds exact counts and %s does not: compare counts with counts", textfmt.Line(counted), textfmt.Line(sampled))
	}
	return counted != "", nil
}

// countSide loads the files of one side and merges them into one profile
// of processes, each file's processes its own; a file that records no
// iterations (a callgrind file) is one process of one run.
func countSide(paths []string, opts []loaders.Option) (*profile.Profile, error) {
	files, err := expandGlobs(paths)
	if err != nil {
		return nil, err
	}
	var procs []*profile.Profile
	for _, f := range files {
		p, err := loaders.Load(f, opts...)
		if err != nil {
			return nil, err
		}
		if _, ok, err := meta.Get(p); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		} else if !ok {
			meta.Set(p, meta.Record{Name: f, WorkUnit: meta.WorkRun, Runs: []meta.Run{{Work: 1}}})
		}
		ps, err := meta.SplitProcesses(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		procs = append(procs, ps...)
	}
	if len(procs) == 1 {
		return procs[0], nil
	}
	return meta.MergeProcesses(procs)
}

// diffCounts judges counted profiles: every function's self count per
// iteration, exactly (diff.CompareCounts), the functions --gate, --module or
// --only name (all without them). Nothing judged is an input error, never
// a pass.
func (c *cli) diffCounts(d *diffFlags, sel selection, format string, out outputs, basePaths, headPaths []string) int {
	if format == "html" || out.html != "" {
		return c.usageErr("diff", "exact counts have no HTML report: use --format text, markdown or json")
	}
	judge, what, err := d.countJudge()
	if err != nil {
		return c.usageErr("diff", "%v", err)
	}
	base, err := countSide(basePaths, sel.loadOptions())
	if err != nil {
		return c.inputErr("diff", err)
	}
	head, err := countSide(headPaths, sel.loadOptions())
	if err != nil {
		return c.inputErr("diff", err)
	}
	if judge == nil {
		judge, what = defaultCountJudge(base, head)
	}
	if diffs := dependsDiffer(base, head); diffs != "" {
		fmt.Fprintf(c.stderr, "hotbudget diff: warning: the sides count different programs (%s): a function's count may move with them\n", textfmt.Line(diffs))
	}
	rep, err := diff.CompareCounts(base, head, judge)
	if err != nil {
		return c.inputErr("diff", err)
	}
	if rep.Judged == 0 {
		return c.inputErr("diff", errors.New(modname.Unmatched(what, strings.Fields(d.module), d.gate, leafCounts(base, head))))
	}
	var b bytes.Buffer
	switch format {
	case "json":
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		err = enc.Encode(struct {
			Schema string            `json:"schema"`
			Failed bool              `json:"failed"`
			Report *diff.CountReport `json:"report"`
		}{"hotbudget.counts/v1", rep.Failed(), rep})
	case "markdown":
		icon := "✅"
		if rep.Failed() {
			icon = "❌"
		}
		fmt.Fprintf(&b, "## %s hotbudget diff: %s counted exactly\n\n```text\n", icon, textfmt.MarkdownEscape(rep.Event))
		var t bytes.Buffer
		err = rep.Write(&t, "text")
		b.WriteString(strings.ReplaceAll(t.String(), "```", "'''"))
		b.WriteString("```\n")
	default:
		err = rep.Write(&b, "text")
		fmt.Fprintf(&b, "%s\n", countVerdict(rep, what))
	}
	if err != nil {
		return c.inputErr("diff", err)
	}
	if out.out != "" {
		if err := atomicfile.Write(out.out, func(f *os.File) error {
			_, err := f.Write(b.Bytes())
			return err
		}); err != nil {
			return c.inputErr("diff", err)
		}
		b.Reset()
		_ = rep.Write(&b, "text")
		fmt.Fprintf(&b, "%s\n", countVerdict(rep, what))
	}
	if _, err := c.stdout.Write(b.Bytes()); err != nil {
		return c.inputErr("diff", err)
	}
	if rep.Failed() {
		return exitFail
	}
	return exitOK
}

// countVerdict is the last line of a text report of counts.
func countVerdict(rep *diff.CountReport, what string) string {
	var names []string
	for _, r := range rep.Rows {
		if r.Verdict == diff.Regressed || r.Verdict == diff.New {
			names = append(names, r.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("no function's count regressed (%d functions judged: %s)", rep.Judged, what)
	}
	return textfmt.Line(fmt.Sprintf("%d of %d functions judged regressed: %s", len(names), rep.Judged, textfmt.List(names, 4)))
}

// countJudge is the functions a comparison of counts judges, from --gate,
// --module and --only, and words for them.
func (d *diffFlags) countJudge() (func(string) bool, string, error) {
	var res []*regexp.Regexp
	var what []string
	switch {
	case d.gate != "" && d.module != "":
		return nil, "", errors.New("--gate and --module both say which functions are gated: give one")
	case d.gate != "":
		re, err := regexp.Compile(d.gate)
		if err != nil {
			return nil, "", fmt.Errorf("--gate: %v", err)
		}
		res, what = append(res, re), append(what, "--gate "+d.gate)
	case d.module != "":
		res, what = append(res, gate.ModulePattern(strings.Fields(d.module))), append(what, "the functions of module "+d.module)
	}
	if d.only != "" {
		re, err := regexp.Compile(d.only)
		if err != nil {
			return nil, "", fmt.Errorf("--only: %v", err)
		}
		res, what = append(res, re), append(what, "--only "+d.only)
	}
	if len(res) == 0 {
		return nil, "every function", nil
	}
	return func(name string) bool {
		for _, re := range res {
			if !re.MatchString(name) {
				return false
			}
		}
		return true
	}, strings.Join(what, " and "), nil
}

// defaultCountJudge is what a comparison of counts judges without --gate,
// --module or --only: as record gates a module's functions and shows the
// runtime's, the functions outside Go's runtime and standard library when
// the profiles hold any (the allocator's and the page allocator's counts
// follow the heap's state: two counted captures of blang/semver's
// ParseComplex, one 2.46% more in Parse, also had eight runtime functions
// past their allowance), else every function (a C program's callgrind
// file). nil judges every function.
func defaultCountJudge(ps ...*profile.Profile) (func(string) bool, string) {
	for _, c := range leafCounts(ps...) {
		if !stdFunction(c.Name) {
			return func(name string) bool { return !stdFunction(name) },
				"the functions outside Go's runtime and standard library; --gate . judges theirs too"
		}
	}
	return nil, "every function"
}

// stdFunction reports whether a function name is of Go's runtime or
// standard library, as a Go binary names it: its package path's first
// element has no dot (runtime.mallocgc, internal/bytealg.IndexByte,
// strings.(*Builder).WriteByte), main's excepted, or it has no package
// (indexbytebody, the runtime's assembly; a C function). A module's path
// has a dot in its first element (github.com/blang/semver/v4.Parse).
func stdFunction(name string) bool {
	if i := strings.IndexByte(name, '/'); i >= 0 {
		return !strings.Contains(name[:i], ".")
	}
	pkg, _, ok := strings.Cut(name, ".")
	if !ok {
		return true
	}
	return pkg != "main" && pkg != "main_test"
}

// dependsDiffer names what the counts of base and head depend on that
// differs (the Go version, the instrument, a dependency), "" when nothing
// does or a side does not say.
func dependsDiffer(base, head *profile.Profile) string {
	b, okb := meta.Known(base)
	h, okh := meta.Known(head)
	if !okb || !okh || len(b.Depends) == 0 || len(h.Depends) == 0 {
		return ""
	}
	var out []string
	for k, v := range b.Depends {
		if h.Depends[k] != v {
			out = append(out, fmt.Sprintf("%s %s -> %s", k, v, h.Depends[k]))
		}
	}
	for k, v := range h.Depends {
		if _, ok := b.Depends[k]; !ok {
			out = append(out, fmt.Sprintf("%s -> %s", k, v))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// leafCounts are the functions of the profiles with their self counts, for
// the names closest to a filter that matched none.
func leafCounts(ps ...*profile.Profile) []suggest.Candidate {
	self := map[string]int64{}
	for _, p := range ps {
		for _, smp := range p.Sample {
			if len(smp.Value) > 0 && len(smp.Location) > 0 && len(smp.Location[0].Line) > 0 && smp.Location[0].Line[0].Function != nil {
				self[smp.Location[0].Line[0].Function.Name] += smp.Value[0]
			}
		}
	}
	out := make([]suggest.Candidate, 0, len(self))
	for n, w := range self {
		out = append(out, suggest.Candidate{Name: n, Weight: w})
	}
	return out
}
