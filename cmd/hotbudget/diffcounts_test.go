package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// countedBase is a real counted baseline (five processes of a perfassert
// Instructions capture of examples/capture.Parse, go1.26).
const countedBase = "examples/baseline/testdata/go1.26/parse.instructions.pb.gz"

// slowed writes a copy of the counted baseline in which fn's self
// instructions are scale times what they were, in every process.
func slowed(t *testing.T, fn string, scale float64) string {
	t.Helper()
	f, err := os.Open(countedBase)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range p.Sample {
		if s.Location[0].Line[0].Function.Name == fn {
			s.Value[0] = int64(float64(s.Value[0]) * scale)
			n++
		}
	}
	if n == 0 {
		t.Fatalf("%s has no samples of %s", countedBase, fn)
	}
	out := filepath.Join(t.TempDir(), "head.instructions.pb.gz")
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDiffCounts: diff judges counted profiles as counts, exactly (it
// judged them as shares with a 10% minimum, and passed a +2.7% change): a
// function 3.8% of the count made 2% slower regressed, named alone; the
// same profile on both sides passes, saying how many functions it judged;
// counts against samples, and a module with no function, exit 2.
func TestDiffCounts(t *testing.T) {
	inRepoRoot(t)
	const parse = "github.com/hotbudget/hotbudget/examples/capture.Parse"
	head := slowed(t, parse, 1.02)
	for _, tc := range []struct {
		name string
		args []string
		exit int
		want []string
		not  []string
	}{
		{"slower", []string{"diff", countedBase, "--", head}, exitFail,
			[]string{"regressed " + parse, "1 of 4 functions judged regressed: " + parse}, []string{"share", "min-change"}},
		{"slower-every-function", []string{"diff", "--gate", ".", countedBase, "--", head}, exitFail,
			[]string{"regressed " + parse, "1 of 296 functions judged regressed: " + parse}, nil},
		{"unchanged-default", []string{"diff", countedBase, "--", countedBase}, exitOK,
			[]string{"no function's count regressed (4 functions judged: the functions outside Go's runtime and standard library; --gate . judges theirs too)"}, nil},
		{"c-program", []string{"diff", "testdata/callgrind/c.callgrind.gz", "--", "testdata/callgrind/c.callgrind.gz"}, exitOK,
			[]string{"no function's count regressed (253 functions judged: every function)"}, nil},
		{"slower-module", []string{"diff", "--module", "github.com/hotbudget/hotbudget", countedBase, "--", head}, exitFail,
			[]string{"1 of 4 functions judged regressed"}, nil},
		{"unchanged", []string{"diff", "--module", "github.com/hotbudget/hotbudget", countedBase, "--", countedBase}, exitOK,
			[]string{"no function's count regressed (4 functions judged: the functions of module github.com/hotbudget/hotbudget)"}, nil},
		{"json", []string{"diff", "--format", "json", countedBase, "--", head}, exitFail,
			[]string{`"schema": "hotbudget.counts/v1"`, `"failed": true`, `"judged": 4`}, nil},
		{"nothing-judged", []string{"diff", "--module", "example.com/other", countedBase, "--", countedBase}, exitUsage,
			[]string{"the functions of module example.com/other matched none of the", "nothing was judged", "heaviest names: github.com/hotbudget/hotbudget/examples/capture.normalizeKey"}, nil},
		{"mixed", []string{"diff", countedBase, "--", "testdata/pprof/busy.pb.gz"}, exitUsage,
			[]string{"holds exact counts and testdata/pprof/busy.pb.gz does not"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, nil, &stdout, &stderr, os.Getenv)
			all := stdout.String() + stderr.String()
			if code != tc.exit {
				t.Fatalf("exit %d, want %d\n%s", code, tc.exit, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(all, w) {
					t.Errorf("output has %q:\n%s", w, all)
				}
			}
		})
	}
}

// TestDiffCountsRealModule: two counted captures of a module nobody here
// wrote (testdata/counts/semver: blang/semver's ParseComplex as record
// --instructions wrote it, base and head): diff names Parse, 2.46% more
// instructions, regressed, alone; the same code counted in other
// processes passes, the runtime's functions whose counts follow the heap's
// state not judged by default (--gate . judges them, and finds five past
// their allowance).
func TestDiffCountsRealModule(t *testing.T) {
	inRepoRoot(t)
	const dir = "testdata/counts/semver/"
	for _, tc := range []struct {
		args []string
		exit int
		want string
	}{
		{[]string{"diff", dir + "base.instructions-diff.pb.gz", "--", dir + "head.instructions-diff.pb.gz"}, exitFail,
			"  regressed github.com/blang/semver/v4.Parse: 366 -> 375 instructions (+2.46%; allowed ±2)\n1 of 11 functions judged regressed: github.com/blang/semver/v4.Parse\n"},
		{[]string{"diff", "--module", "github.com/blang/semver/v4", dir + "base.instructions-diff.pb.gz", "--", dir + "head.instructions-diff.pb.gz"}, exitFail,
			"1 of 11 functions judged regressed: github.com/blang/semver/v4.Parse\n"},
		{[]string{"diff", dir + "base.instructions-diff.pb.gz", "--", dir + "same.instructions-diff.pb.gz"}, exitOK,
			"no function's count regressed (11 functions judged"},
		{[]string{"diff", "--gate", ".", dir + "base.instructions-diff.pb.gz", "--", dir + "same.instructions-diff.pb.gz"}, exitFail,
			"5 of 613 functions judged regressed: runtime."},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, nil, &stdout, &stderr, os.Getenv)
		if code != tc.exit || !strings.Contains(stdout.String(), tc.want) {
			t.Errorf("%q: exit %d, want %d and %q:\n%s%s", tc.args, code, tc.exit, tc.want, stdout.String(), stderr.String())
		}
	}
}
