//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/internal/amplify"
)

// cliChildEnv makes the test binary run the CLI with its arguments (TestMain).
const cliChildEnv = "HOTBUDGET_CLI_CHILD"

// childRun is what the CLI did in a child process.
type childRun struct {
	code   int
	stderr string
	rss    int64         // peak resident set size, bytes
	cpu    time.Duration // user and system time
	wall   time.Duration
}

// runChild runs the CLI in a child process, the test binary itself, and
// measures its peak memory and time.
func runChild(t *testing.T, args ...string) childRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", "HOTBUDGET_MAX_BYTES=", "GITHUB_ACTIONS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	r := childRun{stderr: stderr.String(), wall: time.Since(start)}
	if cmd.ProcessState == nil {
		t.Fatalf("hotbudget %s: %v", strings.Join(args, " "), err)
	}
	r.code = cmd.ProcessState.ExitCode()
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	r.rss = ru.Maxrss << 10 // KiB on Linux
	r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return r
}

// Budgets of the amplification inputs: resident memory and processor time.
const (
	maxRSS = 1 << 30
	maxCPU = 10 * time.Second
)

// amplifier is a hostile input and what the CLI must say of it.
type amplifier struct {
	name string
	args func(path string) []string
	make func(path string) error
	want string // in stderr: what there is too much of
	long bool   // only with HOTBUDGET_LONG=1
}

func gzFile(gen func(w *os.File) error) func(string) error {
	return func(path string) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := gen(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
}

func top(path string) []string   { return []string{"top", path} }
func diff2(path string) []string { return []string{"diff", path, "--", path} }

var amplifiers = []amplifier{
	{name: "strings-30M.pb.gz", args: top, want: "strings",
		make: gzFile(func(f *os.File) error { return amplify.PprofStrings(f, 30_000_000) })},
	{name: "strings-30M-diff.pb.gz", args: diff2, want: "strings", long: true,
		make: gzFile(func(f *os.File) error { return amplify.PprofStrings(f, 30_000_000) })},
	{name: "locations-6M.pb.gz", args: top, want: "locations",
		make: gzFile(func(f *os.File) error { return amplify.PprofLocations(f, 6_000_000) })},
	{name: "sparse-3GiB.pb", args: top, want: "more than the limit of 1 GiB",
		make: func(path string) error { return amplify.SparsePprof(path, 3<<30) }},
	{name: "v8-1M.cpuprofile", args: top, want: "nodes",
		make: gzFile(func(f *os.File) error { return amplify.V8Nodes(f, 1_000_000, amplify.V8Flat) })},
	{name: "strings-300M.pb.gz", args: diff2, want: "strings", long: true,
		make: gzFile(func(f *os.File) error { return amplify.PprofStrings(f, 300_000_000) })},
	{name: "v8-10M.cpuprofile", args: top, want: "nodes", long: true,
		make: gzFile(func(f *os.File) error { return amplify.V8Nodes(f, 10_000_000, amplify.V8Flat) })},
}

// TestAmplificationWithinBudget runs the CLI on inputs small on disk and
// huge once parsed (issue 16): each must be refused, naming the file and
// what there is too much of, within 1 GiB resident and 10 s of processor
// time (processor time, not wall time, which a busy machine stretches).
// The largest, and diff on two copies of one, run only with
// HOTBUDGET_LONG=1. (A gzip trailer claiming 1 GiB allocates nothing it
// could show in the resident size: see index's TestGzipTrailerNotTrusted.)
func TestAmplificationWithinBudget(t *testing.T) {
	if raceEnabled {
		// The race detector multiplies memory by 5 to 10: the budget is
		// measured by the run without it, which CI makes too.
		t.Skip("memory is measured without the race detector")
	}
	long := os.Getenv("HOTBUDGET_LONG") == "1"
	dir := t.TempDir()
	for _, a := range amplifiers {
		t.Run(a.name, func(t *testing.T) {
			if a.long && !long {
				t.Skip("set HOTBUDGET_LONG=1 to run")
			}
			path := filepath.Join(dir, a.name)
			if err := a.make(path); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(path)
			r := runChild(t, a.args(path)...)
			t.Logf("hotbudget %s: exit %d, max RSS %d MiB, cpu %v, wall %v\n%s",
				strings.Join(a.args(a.name), " "), r.code, r.rss>>20, r.cpu.Round(time.Millisecond), r.wall.Round(time.Millisecond), r.stderr)
			if r.code != exitUsage || !strings.Contains(r.stderr, path+": ") || !strings.Contains(r.stderr, a.want) {
				t.Errorf("exit %d, stderr %q: want exit 2 naming %s and %q", r.code, r.stderr, path, a.want)
			}
			if r.rss > maxRSS {
				t.Errorf("max RSS %d MiB, want under %d MiB", r.rss>>20, maxRSS>>20)
			}
			if r.cpu > maxCPU {
				t.Errorf("cpu time %v, want under %v", r.cpu, maxCPU)
			}
		})
	}
}
