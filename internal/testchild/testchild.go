// Package testchild runs a test again in a child process, the test binary
// itself, and passes on the child's output without the lines the test
// names. Tests use it for output they cannot avoid and that says nothing,
// such as RuntimeRateLine, which the runtime prints whenever a test
// profiles at a rate of its own.
package testchild

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// RuntimeRateLine is what runtime.SetCPUProfileRate prints on stderr when
// asked for a rate while the CPU profiler is on (runtime/cpuprof.go).
// runtime/pprof's StartCPUProfile asks for 100 Hz, so profiling at any
// other rate, set just before it (the documented way), prints the line once
// per profile, whether or not another profile is running.
const RuntimeRateLine = "runtime: cannot set cpu profile rate until previous profile has finished."

// env names the test that a child process runs itself.
const env = "HOTBUDGET_TESTCHILD"

// Rerun reports whether t runs in the parent process. There, it runs t's
// test in a child process and makes the child's verdict t's: the caller
// returns at once. In the child it returns false and the test goes on.
// Lines of the child's stderr equal to one of drop are left out, and how
// many were is logged; the rest of the child's output is logged.
func Rerun(t *testing.T, drop ...string) (parent bool) {
	t.Helper()
	if os.Getenv(env) == t.Name() {
		return false
	}
	timeout := ""
	if f := flag.Lookup("test.timeout"); f != nil {
		timeout = f.Value.String()
	}
	r := run(t.Name(), timeout, drop)
	for _, line := range drop {
		t.Logf("child process: %q on stderr %d times, left out", line, r.dropped[line])
	}
	out := r.stdout
	if len(r.kept) > 0 {
		out += "stderr:\n" + strings.Join(r.kept, "\n")
	}
	switch {
	case r.err != nil:
		t.Fatalf("child process: %v\n%s", r.err, out)
	case strings.Contains(out, "--- SKIP: "+t.Name()+" "):
		t.Skipf("child process skipped:\n%s", out)
	case !strings.Contains(out, "--- PASS: "+t.Name()+" "):
		t.Fatalf("child process ran no %s:\n%s", t.Name(), out)
	default:
		t.Logf("child process:\n%s", out)
	}
	return true
}

// result is what a child process printed and how it ended.
type result struct {
	stdout  string
	kept    []string       // lines of stderr not dropped
	dropped map[string]int // dropped lines of stderr, counted
	err     error
}

// run runs the test binary's test name in a child process.
func run(name, timeout string, drop []string) result {
	args := []string{"-test.run=^" + regexp.QuoteMeta(name) + "$", "-test.count=1", "-test.v"}
	if timeout != "" {
		args = append(args, "-test.timeout="+timeout)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), env+"="+name)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := result{err: cmd.Run(), dropped: map[string]int{}}
	r.stdout = stdout.String()
	for _, line := range strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n") {
		if slices.Contains(drop, line) {
			r.dropped[line]++
		} else if line != "" {
			r.kept = append(r.kept, line)
		}
	}
	return r
}
