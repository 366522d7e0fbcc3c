package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestConvertCounts: convert writes a profile of exact counts (a real
// counted baseline, 103,580,328 instructions over five processes) as its
// counts, where it refused them ("sample value is not a time"): folded
// stacks whose numbers are the instructions, a speedscope file whose
// weights are of unit "none" (speedscope shows them as numbers), and a
// pprof profile that is still exact counts. Every function keeps its
// share.
func TestConvertCounts(t *testing.T) {
	inRepoRoot(t)
	const total = 103580328
	dir := t.TempDir()
	folded, ss, pb := filepath.Join(dir, "c.folded"), filepath.Join(dir, "c.speedscope.json"), filepath.Join(dir, "c.pb.gz")
	for _, out := range []string{folded, ss, pb} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"convert", countedBase, out}, nil, &stdout, &stderr, os.Getenv); code != exitOK {
			t.Fatalf("convert to %s: exit %d: %s", out, code, stderr.String())
		}
	}
	data, err := os.ReadFile(folded)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		n, err := strconv.ParseInt(line[strings.LastIndexByte(line, ' ')+1:], 10, 64)
		if err != nil {
			t.Fatalf("folded line %q: %v", line, err)
		}
		sum += n
	}
	if sum != total {
		t.Errorf("folded stacks hold %d, want the %d instructions", sum, total)
	}
	data, err = os.ReadFile(ss)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Profiles []struct {
			Unit    string  `json:"unit"`
			Weights []int64 `json:"weights"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	sum = 0
	for _, p := range doc.Profiles {
		if p.Unit != "none" {
			t.Errorf("speedscope unit %q, want none", p.Unit)
		}
		for _, w := range p.Weights {
			sum += w
		}
	}
	if sum != total {
		t.Errorf("speedscope weights hold %d, want the %d instructions", sum, total)
	}
	const row = "17.15%  17.15%" // normalizeKey's self share, and the sum so far
	for _, f := range []string{folded, ss, pb} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"top", "-n", "1", f}, nil, &stdout, &stderr, os.Getenv); code != exitOK || !strings.Contains(stdout.String(), row) {
			t.Errorf("top of %s: exit %d, want normalizeKey at %s:\n%s%s", f, code, row, stdout.String(), stderr.String())
		}
		if f == pb && !strings.Contains(stdout.String(), "Total: 103580328 instructions (exact counts)") {
			t.Errorf("pprof: not exact counts any more:\n%s", stdout.String())
		}
	}
}
