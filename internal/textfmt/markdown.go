package textfmt

import (
	"fmt"
	"strings"
)

// maxFolded is the most rows MarkdownFolded shows.
const maxFolded = 50

// MarkdownFolded writes rows as a table folded away under a summary naming
// how many there are ("12 unchanged functions"), at most 50 of them, the
// first in their order ("largest 50 shown", first being "largest"); table
// writes the rows it is given.
func MarkdownFolded[T any](b *strings.Builder, rows []T, what, first string, table func([]T)) {
	if len(rows) == 0 {
		return
	}
	n, more := len(rows), ""
	if n > maxFolded {
		more = fmt.Sprintf(", %s %d shown", first, maxFolded)
		rows = rows[:maxFolded]
	}
	fmt.Fprintf(b, "<details><summary>%d %s%s</summary>\n\n", n, what, more)
	table(rows)
	fmt.Fprintln(b, "\n</details>")
}

// MarkdownWarnings writes warnings as quotes, each escaped
// (MarkdownEscape), and a blank line after them.
func MarkdownWarnings(b *strings.Builder, warnings []string) {
	for _, warn := range warnings {
		fmt.Fprintf(b, "> ⚠️ %s\n", MarkdownEscape(warn))
	}
	if len(warnings) > 0 {
		fmt.Fprintln(b)
	}
}
