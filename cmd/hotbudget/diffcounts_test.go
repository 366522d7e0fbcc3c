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
			[]string{"regressed " + parse, "1 of 296 functions judged regressed: " + parse}, []string{"share", "min-change"}},
		{"slower-module", []string{"diff", "--module", "github.com/hotbudget/hotbudget", countedBase, "--", head}, exitFail,
			[]string{"1 of 4 functions judged regressed"}, nil},
		{"unchanged", []string{"diff", "--module", "github.com/hotbudget/hotbudget", countedBase, "--", countedBase}, exitOK,
			[]string{"no function's count regressed (4 functions judged: the functions of module github.com/hotbudget/hotbudget)"}, nil},
		{"json", []string{"diff", "--format", "json", countedBase, "--", head}, exitFail,
			[]string{`"schema": "hotbudget.counts/v1"`, `"failed": true`, `"judged": 296`}, nil},
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
