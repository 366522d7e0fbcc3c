package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
	"github.com/hotbudget/hotbudget/diff"
)

// benchRuns is `go test -bench` output of BenchmarkParse in pkg on cpu,
// one run per value (ns/op).
func benchRuns(pkg, cpu string, ns ...int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "goos: linux\ngoarch: amd64\npkg: %s\ncpu: %s\n", pkg, cpu)
	for _, v := range ns {
		fmt.Fprintf(&b, "BenchmarkParse-2\t1000\t%d ns/op\n", v)
	}
	return b.String()
}

// bench's suggestion to ignore a configuration key names the Go option
// (bench.WithIgnore); the command's user reads the flag that does it, and
// the flag does what the warning says.
func TestBenchIgnoreWarningNamesFlag(t *testing.T) {
	dir := t.TempDir()
	base, head := filepath.Join(dir, "laptop.txt"), filepath.Join(dir, "ci.txt")
	if err := os.WriteFile(base, []byte(benchRuns("example.com/a", "laptop", 100, 101, 99, 100, 102, 100)), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(head, []byte(benchRuns("example.com/a", "ci runner", 150, 152, 149, 151, 150, 151)), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "markdown", "json"} {
		r := runCLI(t, cliCase{args: []string{"bench", "--format", format, base, head}})
		if r.code != exitOK || !strings.Contains(r.stdout, "hotbudget bench --ignore cpu)") || strings.Contains(r.stdout, "WithIgnore") {
			t.Errorf("%s: exit %d, want 0 and the warning naming --ignore cpu, not the Go option:\n%s%s", format, r.code, r.stdout, r.stderr)
		}
	}
	r := runCLI(t, cliCase{args: []string{"bench", "--ignore", "cpu", base, head}})
	if r.code != exitFail || !strings.Contains(r.stdout, "1 of 1 benchmark results regressed") || strings.Contains(r.stdout, "warning:") {
		t.Errorf("--ignore cpu: exit %d, want 1 and Parse-2 regressed, no warning:\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A key that cannot be quoted back stays as the library wrote it.
	rep := &bench.Report{Warnings: []string{`x (bench.WithIgnore("cpu", "go\"os"))`, `y (bench.WithIgnore("a"))`}}
	gate.BenchWords(rep)
	if rep.Warnings[0] != `x (hotbudget bench --ignore cpu,go"os)` || rep.Warnings[1] != "y (hotbudget bench --ignore a)" {
		t.Errorf("benchWords: %q", rep.Warnings)
	}
}

// record judges its benchmark output with the comparison flags bench
// honours (--alpha, --assume, --min-change) and no other: --mode, --gate
// and --min-time say how functions are judged.
func TestRecordBenchOptions(t *testing.T) {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	d := addDiffFlags(fs)
	if err := fs.Parse([]string{"--alpha", "0.01", "--assume", "normal", "--min-change", "5%", "--mode", "absolute", "--gate", "x", "--min-time", "2ms"}); err != nil {
		t.Fatal(err)
	}
	opts, err := d.benchOptions(fs)
	if err != nil {
		t.Fatal(err)
	}
	out := benchRuns("example.com/a", "c", 100, 101, 99, 100, 102, 100)
	rep, err := bench.Compare(strings.NewReader(out), strings.NewReader(out), opts...)
	if err != nil {
		t.Fatal(err)
	}
	want := bench.Settings{Assume: diff.AssumeNormal, Alpha: 0.01, MinRelative: 0.05}
	if s := rep.Settings; s.Assume != want.Assume || s.Alpha != want.Alpha || s.MinRelative != want.MinRelative || len(s.Ignore) != 0 {
		t.Errorf("settings %+v, want %+v", s, want)
	}
	// No flag set: bench's defaults.
	fs = flag.NewFlagSet("record", flag.ContinueOnError)
	d = addDiffFlags(fs)
	if opts, err := d.benchOptions(fs); err != nil || len(opts) != 0 {
		t.Errorf("no flags: %d options, %v", len(opts), err)
	}
}
