package perfassert_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/perfassert"
)

// TestFailuresPointAtTheCaller runs failing assertions in a child test
// process and checks that go test attributes each failure to the line of
// the test that called the assertion, not to perfassert's own files: every
// reporting function marks itself as a helper.
func TestFailuresPointAtTheCaller(t *testing.T) {
	if os.Getenv("PERFASSERT_HELPER_CHILD") == "1" {
		p := load(t, handFolded)
		perfassert.MaxSelfTime(t, p, "main.busy", time.Millisecond)          // line 20
		perfassert.MaxTotalShare(t, p, "main.nope", 1)                       // line 21
		perfassert.NoRegression(t, p, nil)                                   // line 22
		perfassert.MatchBaseline(t, t.TempDir()+"/missing.pb.gz", p)         // line 23
		perfassert.NoRegression(t, load(t, baseFolded), load(t, headFolded)) // line 24
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailuresPointAtTheCaller$", "-test.v")
	cmd.Env = append(os.Environ(), "PERFASSERT_HELPER_CHILD=1", perfassert.UpdateEnv+"=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("child passed:\n%s", out)
	}
	text := string(out)
	for _, line := range []string{"helper_test.go:20: ", "helper_test.go:21: ", "helper_test.go:22: ", "helper_test.go:23: ", "helper_test.go:24: "} {
		if !strings.Contains(text, line) {
			t.Errorf("no failure reported at %s", line)
		}
	}
	for _, own := range []string{"perfassert.go:", "regression.go:", "capture.go:", "text.go:"} {
		if strings.Contains(text, own) {
			t.Errorf("a failure is attributed to perfassert's %s", own)
		}
	}
	if t.Failed() {
		t.Logf("child output:\n%s", text)
	}
}
