package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// TestNoGreenByAbsence rebuilds the probes that turned the gate green
// (`diff` exited 0, "no regression among 7 functions") or showed nonsense
// (-4ns, shares of -150%): an empty head, a head whose thread the change
// renamed under --thread main, a negative-valued side in pprof and in
// folded stacks, a profile whose values overflow, --only or --focus
// matching nothing, and budgets on such inputs. Each exits 2 naming the
// file and the selection, on the fast pprof path and on the loaders' path
// (folded) alike; the controls still compare.
func TestNoGreenByAbsence(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, p *profile.Profile) string { return testutil.WriteProfile(t, dir, name, p) }
	text := func(name, s string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	base := write("base.pb.gz", testutil.SevenFuncs("main", 500e6))
	base2 := write("base2.pb.gz", testutil.SevenFuncs("main", 510e6))
	empty := write("empty.pb.gz", testutil.TimeProfile())
	renamed := write("renamed.pb.gz", testutil.SevenFuncs("worker", 900e6))
	negative := write("negative.pb.gz", testutil.SevenFuncs("main", -300e6))
	overflow := write("overflow.pb.gz", testutil.TimeProfile(
		testutil.Sample{Stack: []string{"main.main", "main.f0"}, Nanos: 1 << 62},
		testutil.Sample{Stack: []string{"main.main", "main.f1"}, Nanos: 1 << 62}))
	foldedBase := text("base.folded", "main;f0 500\nmain;f1 300\nmain;f2 100\n")
	foldedNeg := text("negative.folded", "main;f0 500\nmain;f1 -300\nmain;f2 100\n")
	foldedOver := text("overflow.folded", "main;f0 4611686018428\nmain;f1 4611686018428\n")
	limit := text("limit.yaml", "version: 1\nrules:\n  - function: main.f0\n    thread: main\n    max_self: 2s\n")
	regression := text("regression.yaml", "version: 1\nrules:\n  - function: main.f0\n    thread: main\n    max_regression: 10%\n")

	tests := []struct {
		name string
		args []string
		want []string // what stderr says
	}{
		{"diff, empty head", []string{"diff", base, "--", empty},
			[]string{"head (" + empty + "): the profile has no samples"}},
		{"diff, empty base", []string{"diff", empty, "--", base},
			[]string{"base (" + empty + "): the profile has no samples"}},
		{"diff --thread main, empty head", []string{"diff", "--thread", "main", base, "--", empty},
			[]string{"head (" + empty + `): the profile has no samples (selection: thread "main")`}},
		{"diff --thread main, the thread renamed on head", []string{"diff", "--thread", "main", base, "--", renamed},
			[]string{"head (" + renamed + `): the selection (thread "main") leaves no time; the profile has thread worker`}},
		{"diff --thread main, every head run renamed", []string{"diff", "--thread", "main", base, base2, "--", renamed, renamed},
			[]string{"head (" + renamed + ", " + renamed + `): the selection (thread "main") leaves no time; the profiles have thread worker`}},
		{"diff by glob, the thread renamed", []string{"diff", "--thread", "main", filepath.Join(dir, "base*.pb.gz"), "--", filepath.Join(dir, "renamed*.pb.gz")},
			[]string{"head (" + renamed + `): the selection (thread "main") leaves no time`}},
		{"diff --pid, on neither side", []string{"diff", "--pid", "4242", base, "--", base2},
			[]string{"base (" + base + `): the selection (process "4242") leaves no time; the profile has thread main`}},
		{"diff --only matching nothing", []string{"diff", "--only", "^example[.]com/", base, "--", base2},
			[]string{"base (" + base + "): no time in the functions judged (matching /^example[.]com//)"}},
		{"diff --focus matching nothing on folded (the loaders' path)", []string{"diff", "--focus", "^nothing$", foldedBase, "--", foldedBase},
			[]string{"base (" + foldedBase + "): the selection (focus /^nothing$/) leaves no time"}},
		{"diff, a negative head (pprof)", []string{"diff", base, "--", negative},
			[]string{negative + ": pprof: sample 0 has a negative samples/count value, -30"}},
		{"diff, a negative base (pprof)", []string{"diff", negative, "--", base},
			[]string{negative + ": pprof: sample 0 has a negative"}},
		{"diff, a negative head (folded)", []string{"diff", foldedBase, "--", foldedNeg},
			[]string{foldedNeg + `: folded: line 2: count "-300" is not a non-negative integer`}},
		{"diff, a head whose values overflow (pprof)", []string{"diff", base, "--", overflow},
			[]string{overflow + ": pprof: sample 1: the cpu/nanoseconds values add up to more than 9223372036854775807 nanoseconds"}},
		{"diff, a head whose values overflow (folded)", []string{"diff", foldedBase, "--", foldedOver},
			[]string{foldedOver + ": folded: line 2: count 4611686018428 makes the total time overflow int64 nanoseconds"}},
		{"top, an empty profile", []string{"top", empty}, []string{empty + ": the profile has no samples"}},
		{"top, a negative profile", []string{"top", negative}, []string{negative + ": pprof: sample 0 has a negative"}},
		{"top, values that overflow", []string{"top", overflow}, []string{overflow + ": pprof: sample 1: the cpu/nanoseconds values add up"}},
		{"check, a limit on an empty profile", []string{"check", "--budget", limit, empty},
			[]string{limit + ":5: perfassert: " + empty + `: the profile has no samples (selection: thread "main")`}},
		{"check, a limit on the renamed thread", []string{"check", "--budget", limit, renamed},
			[]string{limit + ":5: perfassert: " + renamed + `: the selection (thread "main") leaves no time; the profile has thread worker`}},
		{"check, a limit on runs that are all empty", []string{"check", "--budget", limit, empty, empty},
			[]string{limit + ":5: perfassert: " + empty + ", " + empty + ": the profiles have no samples"}},
		{"check, a limit on a negative profile", []string{"check", "--budget", limit, negative},
			[]string{negative + ": pprof: sample 0 has a negative"}},
		{"check --baseline, max_regression on an empty head", []string{"check", "--budget", regression, "--baseline", base, empty},
			[]string{regression + ":5: diff: head (" + empty + `): the profile has no samples (selection: thread "main")`}},
		{"check --baseline, max_regression on the renamed thread", []string{"check", "--budget", regression, "--baseline", base, renamed},
			[]string{regression + ":5: diff: head (" + renamed + `): the selection (thread "main") leaves no time; the profile has thread worker`}},
		{"check --baseline, max_regression against an empty baseline", []string{"check", "--budget", regression, "--baseline", empty, base},
			[]string{regression + ":5: diff: base (" + empty + `): the profile has no samples`}},
		{"check --baseline, max_regression against a negative baseline", []string{"check", "--budget", regression, "--baseline", negative, base},
			[]string{negative + ": pprof: sample 0 has a negative"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
			if code != exitUsage {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout.String(), stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("a report on stdout:\n%s", stdout.String())
			}
			if strings.Contains(stderr.String(), "hotbudget diff: diff: ") {
				t.Errorf("the library's name repeats the command's:\n%s", stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr\n%s\ndoes not say\n%s", stderr.String(), w)
				}
			}
		})
	}

	// Controls: the same files with time on both sides compare, pass and fail as ever.
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"diff", "--thread", "main", base, "--", base2}, exitOK},
		{[]string{"diff", "--thread", "worker", renamed, "--", renamed}, exitOK},
		{[]string{"check", "--budget", limit, base}, exitOK},
		{[]string{"check", "--budget", regression, "--baseline", base, base2}, exitOK},
		{[]string{"top", "--thread", "main", base}, exitOK},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" }); code != c.code {
			t.Errorf("%q: exit %d, want %d\n%s%s", c.args, code, c.code, stdout.String(), stderr.String())
		}
	}
}
