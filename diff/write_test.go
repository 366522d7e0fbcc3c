package diff_test

import (
	"io"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/diff"
)

// A format a report does not write is an error naming those it does.
func TestWriteUnknownFormat(t *testing.T) {
	for _, c := range []struct {
		r    interface{ Write(io.Writer, string) error }
		want string
	}{
		{&diff.Report{}, `diff.Report writes no format "pdf"; its formats are "text", "markdown", "json", "html", "regressions", "summary"`},
		{&diff.AllocReport{}, `diff.AllocReport writes no format "pdf"; its formats are "text", "markdown", "json", "html", "summary"`},
		{&diff.CountReport{}, `diff.CountReport writes no format "pdf"; its formats are "text"`},
	} {
		if err := c.r.Write(io.Discard, "pdf"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%T: %v, want %q", c.r, err, c.want)
		}
	}
}
