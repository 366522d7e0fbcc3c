package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/tables"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/internal/valgrind"
)

// TestTopReadsRecordOut: top reads every profile record --instructions
// writes under --out, written here with record's writers: each side's
// whole process of 2N ops and the counted difference of 2N and N ops
// (valgrind.Difference, marked exact, its ops recorded, as countLeaf
// writes it), and a difference with counts below zero as hotbudget wrote
// it before Difference took them out (top refused it: "negative
// instructions/count value"). A count is shown as a count, the difference's
// below zero as they are, in every format; never as shares with a minimum.
func TestTopReadsRecordOut(t *testing.T) {
	out := t.TempDir()
	const pkg, bench = "example.com/m", "BenchmarkParse"
	// N = 10 ops and 2N = 20, one process each: m.parse executes 50
	// instructions an op, the runtime's monitor more in the process of
	// N ops than in the one of 2N (a negative count in the difference).
	n := testutil.CountProfile(10, map[string]int64{"example.com/m.parse": 500, "runtime.sysmon": 9_000, "runtime.main": 100_000})
	twoN := testutil.CountProfile(20, map[string]int64{"example.com/m.parse": 1_000, "runtime.sysmon": 2_000, "runtime.main": 100_000})
	for _, side := range []string{"base", "head"} {
		dir := filepath.Join(out, side)
		whole := twoN.Copy()
		meta.Set(whole, meta.Record{Name: bench + " at " + side + " (the whole process)", WorkUnit: meta.WorkOp, Instrument: "callgrind", Runs: []meta.Run{{Work: 20}}})
		if err := gate.WriteProfile(filepath.Join(dir, filepath.FromSlash(pkg), gate.BenchFile(bench)+".instructions.pb.gz"), whole); err != nil {
			t.Fatal(err)
		}
		d, neg, err := valgrind.Difference(twoN, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(neg) != 1 || neg[0] != "runtime.sysmon" {
			t.Fatalf("negative %q, want runtime.sysmon", neg)
		}
		d.Comments = meta.MarkExact(nil)
		meta.Set(d, meta.Record{Name: bench + " at " + side, WorkUnit: meta.WorkOp, Instrument: "callgrind", Runs: []meta.Run{{Work: 10}}})
		if err := gate.WriteProfile(gate.CountsProfile(dir, pkg, bench), d); err != nil {
			t.Fatal(err)
		}
	}
	// The difference as record wrote it before valgrind.Difference:
	// runtime.sysmon below zero.
	old := testutil.CountProfile(10, map[string]int64{"example.com/m.parse": 500, "runtime.sysmon": -7_000})
	meta.Set(old, meta.Record{Name: "BenchmarkOld at head", WorkUnit: meta.WorkOp, Instrument: "callgrind", Runs: []meta.Run{{Work: 10}}})
	oldPath := gate.CountsProfile(filepath.Join(out, "head"), pkg, "BenchmarkOld")
	if err := gate.WriteProfile(oldPath, old); err != nil {
		t.Fatal(err)
	}
	var files []string
	err := filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) != 5 {
		t.Fatalf("%d files under --out (%v), want 5", len(files), err)
	}
	for _, f := range files {
		for _, format := range []string{"text", "markdown", "json", "html"} {
			var stdout, stderr bytes.Buffer
			if code := run([]string{"top", "-n", "0", "--format", format, f}, nil, &stdout, &stderr, os.Getenv); code != exitOK {
				t.Fatalf("top --format %s %s: exit %d\n%s%s", format, f, code, stdout.String(), stderr.String())
			}
			all := stdout.String()
			if i := strings.Index(all, "<script"); i >= 0 {
				all = all[:i] // the page's script serves diff's pages too
			}
			if strings.Contains(all, "minimum change") || strings.Contains(all, "min-change") || strings.Contains(all, "share of the profile") {
				t.Errorf("top --format %s %s speaks of a minimum change:\n%s", format, f, all)
			}
			if format == "text" && !strings.Contains(all, "instructions (exact counts)") {
				t.Errorf("top %s does not say it shows exact counts:\n%s", f, all)
			}
		}
	}
	// The old difference: its total is 500 - 7000, runtime.sysmon's
	// count -7000 first (the largest in size), m.parse's 500; 50 an op.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"top", oldPath}, nil, &stdout, &stderr, os.Getenv); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got := stdout.String()
	for _, want := range []string{
		"Total: -6500 instructions (exact counts)",
		"1 sample is below zero, shown as they are",
		"Per op: -650 instructions over 10 ops",
		"     -7000 107.69% 107.69%      -7000 107.69%  runtime.sysmon\n",
		"       500  -7.69% 100.00%        500  -7.69%  example.com/m.parse\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("top of a difference lacks %q:\n%s", want, got)
		}
	}
	stdout.Reset()
	if code := run([]string{"top", "--format", "json", oldPath}, nil, &stdout, &stderr, os.Getenv); code != exitOK {
		t.Fatalf("json: exit %d: %s", code, stderr.String())
	}
	var js tables.JSON
	if err := json.Unmarshal(stdout.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	if js.Total != -6500 || len(js.Functions) != 2 || js.Functions[0].Self != -7000 || js.Functions[1].Self != 500 {
		t.Errorf("json: %+v", js)
	}
	// A counted capture of iterations says its count per iteration.
	stdout.Reset()
	capture := filepath.Join(out, "capture.pb.gz")
	if err := gate.WriteProfile(capture, testutil.CountProfile(4, map[string]int64{"example.com/m.parse": 400, "runtime.main": 40})); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"top", capture}, nil, &stdout, &stderr, os.Getenv); code != exitOK || !strings.Contains(stdout.String(), "Per iteration: 110 instructions over 4 iterations") {
		t.Errorf("top of a capture: exit %d\n%s", code, stdout.String())
	}
	// Counted cycles are cycles, not "events".
	stdout.Reset()
	cycles := testutil.CountProfile(4, map[string]int64{"example.com/m.parse": 400})
	cycles.SampleType[0].Type, cycles.PeriodType.Type = "cycles", "cycles"
	if err := gate.WriteProfile(capture, cycles); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"top", capture}, nil, &stdout, &stderr, os.Getenv); code != exitOK || !strings.Contains(stdout.String(), "Total: 400 cycles (exact counts)\nPer iteration: 100 cycles over 4 iterations") {
		t.Errorf("top of counted cycles: exit %d\n%s", code, stdout.String())
	}
	// A CPU profile says nothing per op.
	stdout.Reset()
	inRepoRoot(t)
	if code := run([]string{"top", "testdata/pprof/busy.pb.gz"}, nil, &stdout, &stderr, os.Getenv); code != exitOK || strings.Contains(stdout.String(), "Per ") {
		t.Errorf("top of a CPU profile: exit %d\n%s", code, stdout.String())
	}
}
