package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/input"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/modname"
	"github.com/hotbudget/hotbudget/internal/suggest"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/loaders"
)

// Counted profiles compared: hotbudget diff of instructions or cycles,
// judged as counts (diff.CompareCounts), never as shares.

// CountVerdict is the judgement of two sides of counted profiles.
type CountVerdict struct {
	Report *diff.CountReport
	// What names the functions judged; Warning says what the sides'
	// counts depend on that differs ("" when nothing does).
	What, Warning string
}

// CompareCountFiles loads the counted profiles of each side (globs
// expanded, a callgrind file one process of one run) and judges every
// function's self count per iteration exactly, the functions judge
// matches (nil: DefaultCountJudge's, and what names them). what, mods and
// gate name the filter when it matched nothing, which is an error, never
// a pass.
func CompareCountFiles(basePaths, headPaths []string, opts []loaders.Option, judge func(string) bool, what string, mods []string, gate string) (*CountVerdict, error) {
	base, err := countSide(basePaths, opts)
	if err != nil {
		return nil, err
	}
	head, err := countSide(headPaths, opts)
	if err != nil {
		return nil, err
	}
	if judge == nil {
		judge, what = defaultCountJudge(base, head)
	}
	v := &CountVerdict{What: what}
	if diffs := dependsDiffer(base, head); diffs != "" {
		v.Warning = "the sides count different programs (" + diffs + "): a function's count may move with them"
	}
	if v.Report, err = diff.CompareCounts(base, head, judge); err != nil {
		return nil, err
	}
	// Profiles of counts hold no allocation tables: the whole count's
	// fall alone trades, with four processes a side.
	v.Report.Trade(nil)
	if v.Report.Judged == 0 {
		return nil, errors.New(modname.Unmatched(what, mods, gate, leafCounts(base, head)))
	}
	return v, nil
}

// Write writes the verdict in format: text (the report and the verdict's
// line), markdown or json.
func (v *CountVerdict) Write(w io.Writer, format string) error {
	rep := v.Report
	var b bytes.Buffer
	var err error
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
		fmt.Fprintf(&b, "%s\n", countVerdict(rep, v.What))
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b.Bytes())
	return err
}

// CountedSides reports whether the profiles of both sides are exact counts
// (instructions counted by perfassert.Instructions or record
// --instructions, callgrind files): they are judged as counts
// (diff.CompareCounts), never as shares with a minimum change. Some counted
// and some sampled is an error naming a file of each.
func CountedSides(sides [][]*analysis.Index, paths [][]string) (bool, error) {
	var counted, sampled string
	for i, side := range sides {
		files, _ := input.Globs(paths[i])
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
	files, err := input.Globs(paths)
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
