package testutil

import (
	"os"
	"testing"
)

// FullEnv names the environment variable that runs the slow tests too: the
// end-to-end runs of `hotbudget record`, of the example GitHub workflow and
// of a user's module, real captures compared per operation, the 50,000-
// function page in the browser and the verdict benchmark's targets, 10 to
// 30 seconds each. `go test ./...` leaves them out, so that it stays within
// about two minutes on a busy 2-core machine; .ci/run sets HOTBUDGET_FULL=1
// for its `go test -race ./...`, so CI runs every one of them. (The live
// experiments of HOTBUDGET_LONG=1 are another matter: minutes each, run on
// purpose, never by CI.)
const FullEnv = "HOTBUDGET_FULL"

// Slow skips t, saying what it does and how to run it, unless FullEnv is
// "1" (and -short is not given).
func Slow(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s; skipped with -short", what)
	}
	if os.Getenv(FullEnv) != "1" {
		t.Skipf("%s: a slow test, run with %s=1 (CI does)", what, FullEnv)
	}
}
