package main

import (
	"strings"
	"testing"
)

// record's usage errors for --shard, before anything is built.
func TestRecordShardFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shard", "5/4", "--out", "x", "main", "HEAD"}, "want K/N, the K-th of N shards"},
		{[]string{"--shard", "1/4", "main", "HEAD"}, "--shard needs --out"},
		{[]string{"--shard", "1/4", "--out", "x", "--format", "json", "main", "HEAD"}, "--format is hotbudget merge's with --shard"},
		{[]string{"--shard", "1/4", "--out", "x", "--html", "r.html", "main", "HEAD"}, "--html is hotbudget merge's with --shard"},
	} {
		r := runCLI(t, cliCase{args: append([]string{"record"}, tc.args...)})
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("record %q: exit %d, want 2 and %q\n%s", tc.args, r.code, tc.want, r.stderr)
		}
	}
}
