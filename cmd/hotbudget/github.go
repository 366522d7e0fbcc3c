package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// annotation is one ::error workflow command for GitHub Actions.
type annotation struct {
	title string
	file  string // source file of the function, when known
	line  int64
	msg   string
}

// onGitHub reports whether the CLI runs under GitHub Actions.
func (c *cli) onGitHub() bool { return c.getenv("GITHUB_ACTIONS") == "true" }

// reportGitHub appends the Markdown report to the job summary and prints
// an ::error annotation per failure. Annotations go to stderr, which the
// runner scans like stdout, so that --format json output stays parseable.
func (c *cli) reportGitHub(markdown func(w *bytes.Buffer) error, anns []annotation) error {
	if !c.onGitHub() {
		return nil
	}
	if path := c.getenv("GITHUB_STEP_SUMMARY"); path != "" {
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
		if f := c.repoPath(a.file); f != "" {
			props = append(props, "file="+ghProperty(textfmt.Line(f)))
			if a.line > 0 {
				props = append(props, fmt.Sprintf("line=%d", a.line))
			}
		}
		props = append(props, "title="+ghProperty(textfmt.Line(a.title)))
		// The title and message quote names from the profile: Line makes
		// their controls visible and bounds them; ghData and ghProperty
		// then keep them inside this one command.
		if err := c.errGuard.Command(fmt.Sprintf("::error %s::%s", strings.Join(props, ","), ghData(textfmt.Line(a.msg)))); err != nil {
			return err
		}
	}
	return nil
}

// repoPath turns a source path from a profile into one GitHub can place
// in the repository: relative to GITHUB_WORKSPACE when it lies inside it.
// Paths outside (the Go root, node: built-ins, URLs of other hosts) are
// dropped: an annotation on a file not in the repository is not shown.
func (c *cli) repoPath(file string) string {
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
	ws := c.getenv("GITHUB_WORKSPACE")
	if ws == "" {
		return ""
	}
	rel, err := filepath.Rel(ws, file)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return ""
	}
	return filepath.ToSlash(rel)
}

// ghData escapes a workflow command's message.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
