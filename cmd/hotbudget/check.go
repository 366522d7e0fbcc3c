package main

import (
	"bytes"
	"fmt"

	"github.com/hotbudget/hotbudget/budget"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/ghactions"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/input"
)

const checkUsage = `Usage: hotbudget check --budget FILE [--baseline BASE]... [flags] PROFILE...

Checks profiles against the per-function limits of a budget file (YAML or
JSON; schema in 'go doc github.com/hotbudget/hotbudget/budget') and prints
every rule's result. Several profiles are runs of one program: limits apply
to the mean over runs. max_regression rules compare with the --baseline
profiles using the statistics of 'hotbudget diff'. Globs are expanded.

Exit status: 0 every rule passed, 1 a rule failed, 2 usage or input error
(a malformed budget file is reported as FILE:LINE: what is wrong).

Under GitHub Actions (GITHUB_ACTIONS=true) the Markdown report is also
appended to $GITHUB_STEP_SUMMARY and each failure is printed as an ::error
annotation naming the function.

Example budget (perf-budget.yaml):

	version: 1
	rules:
	  - function: main.parseRecords
	    max_self: 200ms
	    max_total_share: 70%
	  - match: '^crypto/'
	    max_self_share: 80%
	  - function: main.hashBlock
	    max_regression: 10%
	  - function: main.encode         # on heap and allocation profiles
	    max_allocs: 1000              # objects it allocates itself
	    max_total_alloc_bytes: 64MiB  # bytes it and its callees allocate

Examples:

	hotbudget check --budget testdata/budget/busy.yaml testdata/pprof/busy.pb.gz
	hotbudget check --budget perf-budget.yaml --baseline 'base/*.pb.gz' 'head/*.pb.gz'
	hotbudget check --budget perf-budget.json --format json cpu.pprof
	hotbudget check --budget testdata/budget/heap.yaml testdata/heap/heap.pb.gz
`

func (c *cli) check(args []string) int {
	fs := c.flagSet("check", checkUsage)
	budgetFile := fs.String("budget", "", "the budget `file` (YAML or JSON); required")
	var baseline listFlag
	fs.Var(&baseline, "baseline", "a baseline `profile` for max_regression rules (repeatable; globs expanded)")
	format := newChoice("text", "text", "markdown", "json")
	fs.Var(format, "format", "output `text|markdown|json`")
	view := viewFlag(fs.FlagSet)
	sampleIndex := fs.String("sample-index", "", "the sample value of rules that name none, by `type name or index` as go tool pprof -sample_index (the allocation limits default to alloc_objects or alloc_space)")
	pos, code := c.parse(fs, args)
	if code >= 0 {
		return code
	}
	if *budgetFile == "" {
		return c.usageErr("check", "--budget is required")
	}
	if len(pos) == 0 {
		return c.usageErr("check", "no profiles to check")
	}
	b, err := budget.Load(*budgetFile)
	if err != nil {
		return c.inputErr("check", err)
	}
	for i := range b.Rules {
		if b.Rules[i].Selection.SampleType == "" {
			b.Rules[i].Selection.SampleType = *sampleIndex
		}
	}
	sel := selection{view: view}
	profiles, err := input.Reader{Stderr: c.stderr, Cmd: "check"}.Profiles(pos, sel.loadOptions()...)
	if err != nil {
		return c.inputErr("check", err)
	}
	base, err := input.Reader{Stderr: c.stderr, Cmd: "check"}.Profiles(baseline, sel.loadOptions()...)
	if err != nil {
		return c.inputErr("check", err)
	}
	res, err := budget.Check(b, profiles, base)
	if err != nil {
		return c.noTimeErr("check", err, map[string][]string{"": pos, "head": pos, "base": baseline})
	}
	switch format.value {
	case "json":
		err = res.Write(c.stdout, "json")
	case "markdown":
		err = res.Write(c.stdout, "markdown")
	default:
		err = res.Write(c.stdout, "text")
	}
	if err != nil {
		return c.inputErr("check", err)
	}
	var anns []ghactions.Annotation
	for _, f := range res.Failures() {
		title := fmt.Sprintf("hotbudget check: %s %s", f.Rule, f.Check)
		if f.Function != "" {
			title = fmt.Sprintf("hotbudget check: %s %s", f.Function, f.Check)
		}
		anns = append(anns, ghactions.Annotation{Title: title, File: f.File, Line: f.FuncLine,
			Msg: fmt.Sprintf("%s:%d: %s", res.Budget, f.Line, f.Message)})
	}
	if err := c.github().Report(func(w *bytes.Buffer) error { return res.Write(w, "markdown") }, anns); err != nil {
		return c.inputErr("check", err)
	}
	if !res.Passed() {
		return exitFail
	}
	return exitOK
}
