// Package ghactions is how hotbudget's commands report to a GitHub
// Actions runner: the job summary and ::error workflow commands, every
// name from a profile escaped so that it stays text inside one command.
package ghactions

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Annotation is one ::error workflow command for GitHub Actions.
type Annotation struct {
	Title string
	File  string // source file of the function, when known
	Line  int64
	Msg   string
}

// Runner is the GitHub Actions runner a command reports to: its
// environment (getenv) and the guard its workflow commands go through.
type Runner struct {
	Getenv func(string) string
	Guard  *textfmt.Guard
}

// Report appends the Markdown report to the job summary and prints an
// ::error annotation per failure, when the command runs under GitHub
// Actions (GITHUB_ACTIONS=true). Annotations go to stderr (the guard),
// which the runner scans like stdout, so that --format json output stays
// parseable.
func (c Runner) Report(markdown func(w *bytes.Buffer) error, anns []Annotation) error {
	if c.Getenv("GITHUB_ACTIONS") != "true" {
		return nil
	}
	if path := c.Getenv("GITHUB_STEP_SUMMARY"); path != "" {
		var b bytes.Buffer
		if err := markdown(&b); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
		}
		_, err = f.Write(b.Bytes())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
		}
	}
	for _, a := range anns {
		props := []string{}
		if f := c.RepoPath(a.File); f != "" {
			props = append(props, "file="+Property(textfmt.Line(f)))
			if a.Line > 0 {
				props = append(props, fmt.Sprintf("line=%d", a.Line))
			}
		}
		props = append(props, "title="+Property(textfmt.Line(a.Title)))
		// The title and message quote names from the profile: Line makes
		// their controls visible and bounds them; ghData and ghProperty
		// then keep them inside this one command.
		if err := c.Guard.Command(fmt.Sprintf("::error %s::%s", strings.Join(props, ","), Data(textfmt.Line(a.Msg)))); err != nil {
			return err
		}
	}
	return nil
}

// RepoPath turns a source path from a profile into one GitHub can place
// in the repository: relative to GITHUB_WORKSPACE when it lies inside it.
// Paths outside (the Go root, node: built-ins, URLs of other hosts) are
// dropped: an annotation on a file not in the repository is not shown.
func (c Runner) RepoPath(file string) string {
	file = strings.TrimPrefix(file, "file://")
	if file == "" || strings.Contains(file, "://") {
		return ""
	}
	if !filepath.IsAbs(file) {
		if strings.Contains(file, ":") { // node:internal/..., webpack:...
			return ""
		}
		return filepath.ToSlash(file)
	}
	ws := c.Getenv("GITHUB_WORKSPACE")
	if ws == "" {
		return ""
	}
	rel, err := filepath.Rel(ws, file)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return ""
	}
	return filepath.ToSlash(rel)
}

// Data escapes a workflow command's message.
func Data(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// Property escapes a workflow command's property value.
func Property(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// OfDiff is an ::error annotation per regression of rep.
func OfDiff(cmd string, rep *diff.Report) []Annotation {
	var anns []Annotation
	for _, r := range rep.Regressions() {
		f := rep.Figures(r)
		msg := fmt.Sprintf("%s regressed: %s %s -> %s (%s %s, p=%.3g, q=%.3g)", r.Name, rep.Settings.Metric,
			f.Base, f.Head, f.Change, rep.ChangeHeader(), r.P, r.Q)
		anns = append(anns, Annotation{Title: "hotbudget " + cmd + ": " + r.Name + " regressed", File: r.File, Msg: msg})
	}
	if h := rep.Headline; h.Verdict == diff.Regressed {
		anns = append(anns, Annotation{Title: "hotbudget " + cmd + ": the program's time per " + h.Per + " regressed",
			Msg: fmt.Sprintf("time per %s %+.1f%% (p=%.3g)", h.Per, 100*h.Relative, h.P)})
	}
	return anns
}

// OfBench is an ::error annotation per regressed benchmark
// result of rep, named with its package.
func OfBench(cmd string, rep *bench.Report) []Annotation {
	var anns []Annotation
	for _, r := range rep.Regressions() {
		name := r.Name
		if pkg := r.Config["pkg"]; pkg != "" {
			name += " (" + pkg + ")"
		}
		msg := fmt.Sprintf("%s regressed: %.4g -> %.4g %s (%+.1f%%, p=%.3g, q=%.3g)", name,
			r.Base.Median, r.Head.Median, r.Unit, 100*r.Relative, r.P, r.Q)
		anns = append(anns, Annotation{Title: "hotbudget " + cmd + ": " + name + " regressed", Msg: msg})
	}
	return anns
}
