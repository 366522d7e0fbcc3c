package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
)

// TestOptionFlags: the library's messages that name a Go option reach the
// command's user as the flag that sets it (optionFlags), in every message
// the command prints: an error (UnrelatedError's hint), a near miss and a
// report warning. A library message reworded without its phrase here
// fails this test.
func TestOptionFlags(t *testing.T) {
	goOption := regexp.MustCompile(`\b(diff|limits|perfassert)\.With\w+\(|analysis\.Selection`) // a call; "(diff.WithRename)" names the option beside the flag
	dir := t.TempDir()
	var base, head []string
	for r := range 5 {
		for _, side := range []string{"base", "head"} {
			var samples []testutil.Sample
			for f := range 20 {
				n := int64(100+10*f+r) * 10_000_000
				if side == "head" && f == 0 {
					n += n / 2
				}
				samples = append(samples, testutil.Sample{Stack: []string{"main.main", fmt.Sprintf("main.f%02d", f)}, Nanos: n})
			}
			path := testutil.WriteProfile(t, dir, fmt.Sprintf("%s-%d.pb.gz", side, r), testutil.TimeProfile(samples...))
			if side == "base" {
				base = append(base, path)
			} else {
				head = append(head, path)
			}
		}
	}
	// One run a side, every function in main.go, head's main.f05 named
	// main.g05 (quoted, as a hostile name might be).
	renamed := func(side string) string {
		var samples []testutil.Sample
		for f := range 20 {
			name := fmt.Sprintf("main.f%02d", f)
			if side == "head" && f == 5 {
				name = `main.g"05`
			}
			samples = append(samples, testutil.Sample{Stack: []string{"main.main", name}, Nanos: int64(100+10*f) * 10_000_000})
		}
		p := testutil.TimeProfile(samples...)
		for _, fn := range p.Function {
			fn.Filename = "/src/app/main.go"
		}
		return testutil.WriteProfile(t, dir, "renamed-"+side+".pb.gz", p)
	}
	regress := filepath.Join(repoRoot, "testdata", "regress")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"diff", "--key", "name+file", filepath.Join(repoRoot, "testdata/cpuprofile/busy.cpuprofile"), "--", filepath.Join(regress, "head-1.pb.gz")},
			"do file paths or lines differ between the builds? (--key name)"},
		{[]string{"diff", "--gate", "parseRecords", filepath.Join(regress, "base-*.pb.gz"), "--", filepath.Join(regress, "head-*.pb.gz")},
			"outside the gated functions; gate every function with --gate '.')"},
		{append(append(append([]string{"diff", "--assume", "nothing"}, base...), "--"), head...),
			"take more runs, or use the default model (WithAssumption(AssumeModel), --assume model)"},
		{[]string{"diff", renamed("base"), "--", renamed("head")},
			`if it was renamed, --rename 'main.f05=main.g"05' (diff.WithRename) judges them as one function`},
		{[]string{"diff", filepath.Join(regress, "base-*.pb.gz"), "--", filepath.Join(regress, "head-*.pb.gz")},
			"the work per run is unknown; pass --same-work (WithSameWork) when every run did the same work"},
		{[]string{"diff", "--mode", "per-op", "--anchor", "main.main", filepath.Join(regress, "base-*.pb.gz"), "--", filepath.Join(regress, "head-*.pb.gz")},
			"declare equal work with --same-work to judge the time per run"},
		// The selection is analysis.Selection in Go, the selection flags
		// here: its messages name neither.
		{[]string{"diff", "--thread", "nobody", filepath.Join(regress, "base-1.pb.gz"), "--", filepath.Join(regress, "head-1.pb.gz")},
			`the selection (thread "nobody") leaves no time; the profile has samples without process or thread labels`},
		{[]string{"diff", "--thread", "", filepath.Join(regress, "base-1.pb.gz"), "--", filepath.Join(regress, "head-1.pb.gz")},
			"--thread, --pid: empty thread name or tid in the selection"},
	} {
		r := runCLI(t, cliCase{args: tc.args})
		out := r.stdout + r.stderr
		if !strings.Contains(out, tc.want) {
			t.Errorf("%q: output lacks %q:\n%s", tc.args[:3], tc.want, out)
		}
		if goOption.MatchString(out) {
			t.Errorf("%q: output names a Go option where the command has a flag:\n%s", tc.args[:3], out)
		}
	}
}
