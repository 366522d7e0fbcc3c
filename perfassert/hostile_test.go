package perfassert_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/perfassert"
)

// failures is a TestingT that keeps the failure messages.
type failures struct{ msgs []string }

func (f *failures) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// TestHostileNamesInFailures fails assertions on a profile whose names,
// files, labels and comments carry the attacks of issue 16: a failure
// message goes to the test log, which the GitHub Actions runner reads, so
// it must hold no forged workflow command and no raw control character,
// whether it lists the function's neighbours ("did you mean"), the
// functions a pattern matched, the top functions or the heaviest stacks.
func TestHostileNamesInFailures(t *testing.T) {
	p := testutil.HostileProfile(testutil.Hostile, true)
	var f failures
	perfassert.MaxSelfTime(&f, p, testutil.Hostile[1]+"x", 1)      // missing: did you mean
	perfassert.MaxSelfShare(&f, p, ".", 0.01, perfassert.Regexp()) // matched, top, stacks
	perfassert.MaxTotalShare(&f, p, "caller", 0.01, perfassert.Regexp())
	if len(f.msgs) != 3 {
		t.Fatalf("%d failures, want 3: %q", len(f.msgs), f.msgs)
	}
	all := strings.Join(f.msgs, "\n")
	if bad := testutil.Forged(all); len(bad) > 0 {
		t.Errorf("forged workflow commands in the failure text: %q", bad)
	}
	if c := testutil.RawControl(all); c != "" {
		t.Errorf("raw control character in the failure text: %s", c)
	}
	for _, want := range []string{"did you mean", "top functions", "heaviest stacks", `main.f\n::error title=X::pwned`} {
		if !strings.Contains(all, want) {
			t.Errorf("the failure text lacks %q:\n%s", want, all)
		}
	}
}
