package textfmt

import (
	"fmt"
	"io"
	"strings"
)

// Writers maps a report format's name ("text", "markdown", ...) to the
// writer of that format, in the order the formats are listed in errors.
type Writers []struct {
	Format string
	Write  func(io.Writer) error
}

// Write writes with the writer of format, or returns an error naming the
// formats the report (what, e.g. "diff.Report") writes.
func (ws Writers) Write(w io.Writer, what, format string) error {
	names := make([]string, 0, len(ws))
	for _, x := range ws {
		if x.Format == format {
			return x.Write(w)
		}
		names = append(names, fmt.Sprintf("%q", x.Format))
	}
	return fmt.Errorf("%s writes no format %q; its formats are %s", what, format, strings.Join(names, ", "))
}
