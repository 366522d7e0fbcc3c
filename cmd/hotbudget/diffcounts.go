package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

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
	v, err := gate.CompareCountFiles(basePaths, headPaths, sel.loadOptions(), judge, what, strings.Fields(d.module), d.gate)
	if err != nil {
		return c.inputErr("diff", err)
	}
	if v.Warning != "" {
		fmt.Fprintf(c.stderr, "hotbudget diff: warning: %s\n", textfmt.Line(v.Warning))
	}
	var b bytes.Buffer
	if err := v.Write(&b, format); err != nil {
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
		_ = v.Write(&b, "text")
	}
	if _, err := c.stdout.Write(b.Bytes()); err != nil {
		return c.inputErr("diff", err)
	}
	if v.Report.Failed() {
		return exitFail
	}
	return exitOK
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
