package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/internal/synth"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// The speed goal of hotbudget top and diff is set against the tool a user
// would otherwise run, go tool pprof, on the same two files: Go CPU
// profiles of 50,000 functions and 200,000 stacks of depth 8 to 24 (about
// 9 MB each), generated from a fixed seed. Each benchmark times both side
// by side in one run:
//
//	go test -run '^$' -bench 'Top50k|Diff50k' -count 6 ./cmd/hotbudget | tee new.txt
//	benchstat -col /tool new.txt
//
// hotbudget runs in process through the same run function as the binary;
// pprof runs as its own process (the binary go tool -n pprof names, so the
// go command's start-up is not counted against it).

var big struct {
	once       sync.Once
	dir        string
	base, head string
	err        error
}

// bigPair writes the base and head profiles once per test binary; the
// directory is removed by TestMain.
func bigPair(b *testing.B) (base, head string) {
	b.Helper()
	big.once.Do(func() {
		big.dir, big.err = os.MkdirTemp("", "hotbudget-bench-*")
		if big.err != nil {
			return
		}
		big.base = filepath.Join(big.dir, "base.pb.gz")
		big.head = filepath.Join(big.dir, "head.pb.gz")
		headSpec := synth.Big
		headSpec.Slower = 50
		for path, spec := range map[string]synth.Spec{big.base: synth.Big, big.head: headSpec} {
			f, err := os.Create(path)
			if err != nil {
				big.err = err
				return
			}
			if err := synth.Profile(spec).Write(f); err != nil {
				big.err = err
			}
			if err := f.Close(); err != nil && big.err == nil {
				big.err = err
			}
		}
	})
	if big.err != nil {
		b.Fatal(big.err)
	}
	return big.base, big.head
}

// mainEnv, set to 1, makes the test binary hotbudget itself: tests run it
// as a child process to send it signals.
const mainEnv = "HOTBUDGET_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
	}
	if os.Getenv(cliChildEnv) == "1" { // the test binary as the CLI: see runChild
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
	}
	testutil.ClearGitEnv()
	code := m.Run()
	if big.dir != "" {
		os.RemoveAll(big.dir)
	}
	os.Exit(code)
}

// pprofTool returns the path of the pprof binary of the go toolchain.
func pprofTool(b *testing.B) string {
	out, err := exec.Command("go", "tool", "-n", "pprof").Output()
	if err != nil {
		b.Skipf("go tool -n pprof: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// Besides wall time, both report cpu-ns/op, the user and system time spent
// (all threads; for pprof, its process), which a machine busy with other
// work inflates less than it inflates wall time.

func benchCLI(b *testing.B, want int, args ...string) {
	start := testutil.CPUTime()
	for b.Loop() {
		if code := run(args, strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" }); code != want {
			b.Fatalf("hotbudget %s: exit %d, want %d", strings.Join(args, " "), code, want)
		}
	}
	if used := testutil.CPUTime() - start; used > 0 {
		b.ReportMetric(float64(used)/float64(b.N), "cpu-ns/op")
	}
}

func benchExec(b *testing.B, name string, args ...string) {
	var used time.Duration
	for b.Loop() {
		cmd := exec.Command(name, args...)
		cmd.Stdout = io.Discard
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
		}
		used += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if used > 0 {
		b.ReportMetric(float64(used)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkTop50k: hotbudget top against go tool pprof -top.
func BenchmarkTop50k(b *testing.B) {
	base, _ := bigPair(b)
	b.Run("tool=hotbudget", func(b *testing.B) { benchCLI(b, exitOK, "top", base) })
	b.Run("tool=pprof", func(b *testing.B) { benchExec(b, pprofTool(b), "-top", base) })
}

// BenchmarkDiff50k: hotbudget diff against go tool pprof -top -diff_base.
func BenchmarkDiff50k(b *testing.B) {
	base, head := bigPair(b)
	b.Run("tool=hotbudget", func(b *testing.B) { benchCLI(b, exitOK, "diff", base, "--", head) })
	b.Run("tool=pprof", func(b *testing.B) { benchExec(b, pprofTool(b), "-top", "-diff_base", base, head) })
}
