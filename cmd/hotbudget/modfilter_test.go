package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
)

// TestDiffModuleEscapedNames: diff --module gates a module with a dot in
// its last path element by the names the toolchain writes
// (gopkg.in/yaml%2ev3.F), finding its regression; a module or gate that
// matches none of the functions exits 2, naming the filter and the
// closest names, never passing with nothing judged.
func TestDiffModuleEscapedNames(t *testing.T) {
	dir := t.TempDir()
	var base, head []string
	for r := range 5 {
		for _, side := range []string{"base", "head"} {
			var samples []testutil.Sample
			for f, name := range []string{"gopkg.in/yaml%2ev3.yaml_parser_scan", "gopkg.in/yaml%2ev3.(*decoder).unmarshal", "runtime.mallocgc", "runtime.memmove"} {
				n := int64(1000+200*f+7*r) * 10_000_000
				if side == "head" && f == 0 {
					n += n / 2
				}
				samples = append(samples, testutil.Sample{Stack: []string{"main.main", "gopkg.in/yaml%2ev3_test.BenchmarkX", name}, Nanos: n})
			}
			path := testutil.WriteProfile(t, dir, fmt.Sprintf("%s-%d.pb.gz", side, r), testutil.TimeProfile(samples...))
			if side == "base" {
				base = append(base, path)
			} else {
				head = append(head, path)
			}
		}
	}
	args := func(flags ...string) []string {
		return append(append(append(append([]string{"diff"}, flags...), base...), "--"), head...)
	}
	r := runCLI(t, cliCase{args: args("--module", "gopkg.in/yaml.v3")})
	if r.code != exitFail || !strings.Contains(r.stdout, "regressed  gopkg.in/yaml%2ev3.yaml_parser_scan") {
		t.Errorf("--module gopkg.in/yaml.v3: exit %d, want %d naming gopkg.in/yaml%%2ev3.yaml_parser_scan regressed\n%s%s", r.code, exitFail, r.stdout, r.stderr)
	}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--module", "gopkg.in/yaml.v2"}, "--module gopkg.in/yaml.v2 matched none of the 6 functions measured, so nothing was judged; closest names: gopkg.in/yaml%2ev3."},
		{[]string{"--module", "example.com/m"}, "--module example.com/m matched none of the 6 functions measured, so nothing was judged; heaviest names: "},
		{[]string{"--gate", "^yaml_parser"}, "--gate ^yaml_parser matched none of the 6 functions measured, so nothing was judged; closest names: gopkg.in/yaml%2ev3.yaml_parser_scan"},
	} {
		r := runCLI(t, cliCase{args: args(tc.flags...)})
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, want %d saying %q\n%s%s", tc.flags, r.code, exitUsage, tc.want, r.stdout, r.stderr)
		}
	}
	if r := runCLI(t, cliCase{args: args("--module", " ")}); r.code != exitUsage {
		t.Errorf("--module ' ': exit %d, want %d", r.code, exitUsage)
	}
}
