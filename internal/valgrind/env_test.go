package valgrind

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// envChild makes TestEnvRandRepeats's child print math/rand's first number.
const envChild = "HOTBUDGET_TEST_ENV_CHILD"

// TestEnvRandRepeats runs this test binary twice in Env's environment: a
// program that seeds math/rand's global generator with the time (as
// google/btree's benchmarks do) draws the same numbers in both, where
// without Env it draws others.
func TestEnvRandRepeats(t *testing.T) {
	if os.Getenv(envChild) == "1" {
		//lint:ignore SA1019 the deprecated call is what is tested: Env makes it a no-op
		rand.Seed(time.Now().UnixNano())
		fmt.Println("drew", rand.Int63(), rand.Perm(5))
		return
	}
	draw := func(env []string) string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestEnvRandRepeats$", "-test.count=1")
		cmd.Env = append(env, envChild+"=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return string(out)
	}
	env := Env(os.Environ())
	if a, b := draw(env), draw(env); a != b {
		t.Errorf("under Env the children drew differently:\n%s\n%s", a, b)
	}
	if a, b := draw(os.Environ()), draw(os.Environ()); a == b {
		t.Errorf("without Env the children drew alike, so the test cannot tell:\n%s", a)
	}
	got := Env([]string{"PATH=/bin", "GODEBUG=gctrace=1", "GOGC=50", "GOMAXPROCS=8", "X=1"}, "X")
	want := []string{"PATH=/bin", "GODEBUG=gctrace=1," + RepeatGODEBUG, "GOGC=off", "GOMAXPROCS=1"}
	if !slices.Equal(got, want) {
		t.Errorf("Env: %q, want %q", got, want)
	}
}
