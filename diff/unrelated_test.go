package diff_test

import (
	"testing"

	"github.com/hotbudget/hotbudget/diff"
)

// TestUnrelatedErrorNamesFiles: the error names each side's files when the
// caller sets them, the first two and a count past three.
func TestUnrelatedErrorNamesFiles(t *testing.T) {
	e := &diff.UnrelatedError{BaseShared: 0.02, HeadShared: 0.05, Hint: "not the same program"}
	if got, want := e.Error(), "diff: base and head share functions holding only 2.0% of the base's time and 5.0% of the head's: not the same program"; got != want {
		t.Errorf("without files:\n%s\nwant\n%s", got, want)
	}
	e.Files = [2][]string{{"go.pb.gz"}, {"h1", "h2", "h3", "h4", "h5"}}
	if got, want := e.Error(), "diff: base (go.pb.gz) and head (h1, h2 and 3 more) share functions holding only 2.0% of the base's time and 5.0% of the head's: not the same program"; got != want {
		t.Errorf("with files:\n%s\nwant\n%s", got, want)
	}
}
