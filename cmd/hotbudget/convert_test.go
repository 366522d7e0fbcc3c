package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/tables"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// topByName runs `hotbudget top -n 0 --format json` and sums self and total
// per function name (pprof merges functions by name).
func topByName(t *testing.T, path string) (map[string][2]int64, int64) {
	t.Helper()
	fns, total := topRows(t, path)
	rows := make(map[string][2]int64)
	for _, f := range fns {
		r := rows[f.Name]
		rows[f.Name] = [2]int64{r[0] + f.Self, r[1] + f.Total}
	}
	return rows, total
}

// topRows runs `hotbudget top -n 0 --format json`.
func topRows(t *testing.T, path string) ([]tables.Function, int64) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"top", "-n", "0", "--format", "json", path}, nil, &stdout, &stderr, os.Getenv); code != 0 {
		t.Fatalf("top %s: exit %d: %s", path, code, stderr.String())
	}
	var out tables.JSON
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Unit != "ns" {
		t.Fatalf("top %s: unit %q: not a time", path, out.Unit)
	}
	return out.Functions, out.Total
}

// TestConvertOpensInPprof converts a real Node profile to pprof and checks
// that `go tool pprof -top` shows the self and total `hotbudget top` shows.
func TestConvertOpensInPprof(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go not on PATH: %v", err)
	}
	in := filepath.Join(repoRoot, "testdata", "cpuprofile", "busy.cpuprofile")
	out := filepath.Join(t.TempDir(), "busy.pb.gz")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"convert", in, out}, nil, &stdout, &stderr, os.Getenv); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr.String())
	}
	want, total := topByName(t, in)
	count := make(map[string]int, len(want))
	ids, _ := topRows(t, in)
	for _, f := range ids {
		count[f.Name]++
	}
	if total == 0 || len(want) < 5 {
		t.Fatalf("top of %s looks empty: total %d, %d functions", in, total, len(want))
	}
	got := testutil.PprofTop(t, out)
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: missing from go tool pprof -top", name)
			continue
		}
		// pprof merges same-named functions (anonymous JavaScript
		// functions in several files) and counts each sample once, so
		// their total is at most the sum of ours.
		if g[0] != w[0] || (count[name] == 1 && g[1] != w[1]) || g[1] > w[1] {
			t.Errorf("%s (%d rows): pprof flat/cum %v ns, hotbudget top %v ns", name, count[name], g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("pprof shows %d functions, top %d", len(got), len(want))
	}
	if got["busyLoop"][0] < total/2 {
		t.Errorf("busyLoop self %d ns, want most of %d ns", got["busyLoop"][0], total)
	}
	// The converted file reads back with the same numbers.
	back, _ := topByName(t, out)
	for name, w := range want {
		if back[name] != w {
			t.Errorf("%s: after round trip %v, before %v", name, back[name], w)
		}
	}
}

// TestConvertFormats writes every output format, chosen by extension or by
// --to, and reads each back with the same self share per function (folded
// stacks keep sample counts, not times: see internal/folded).
func TestConvertFormats(t *testing.T) {
	in := filepath.Join(repoRoot, "testdata", "pprof", "busy.pb.gz")
	want, wantTotal := topByName(t, in)
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		out  string
	}{
		{"speedscope by extension", nil, "busy.speedscope.json"},
		{"folded by extension", nil, "busy.folded"},
		{"pprof by --to", []string{"--to", "pprof"}, "busy.out"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.out)
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"convert"}, c.args...), in, out)
			if code := run(args, nil, &stdout, &stderr, os.Getenv); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			got, gotTotal := topByName(t, out)
			for name, w := range want {
				if got[name][0]*wantTotal != w[0]*gotTotal {
					t.Errorf("%s: self %d of %d ns after conversion, %d of %d before", name, got[name][0], gotTotal, w[0], wantTotal)
				}
			}
		})
	}
	t.Run("unknown extension", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := run([]string{"convert", in, filepath.Join(dir, "busy.xyz")}, nil, &stdout, &stderr, os.Getenv)
		if code != exitUsage || !strings.Contains(stderr.String(), "busy.xyz") {
			t.Errorf("exit %d, stderr %q: want 2 and a message naming the file", code, stderr.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "busy.xyz")); err == nil {
			t.Error("output written despite the error")
		}
	})
	t.Run("stdout", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"convert", "--to", "folded", in, "-"}, nil, &stdout, &stderr, os.Getenv); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		if !strings.Contains(stdout.String(), "main.parseRecords") {
			t.Errorf("folded output lacks main.parseRecords:\n%s", stdout.String())
		}
	})
}

// TestTopMatchesPprof: `hotbudget top --format json -n 0` on a real Go
// profile gives exactly the flat and cum of `go tool pprof -top`.
func TestTopMatchesPprof(t *testing.T) {
	for _, path := range []string{
		filepath.Join(repoRoot, "testdata", "pprof", "busy.pb.gz"),
		filepath.Join(repoRoot, "testdata", "corpus", "pprof", "go.crc32.cpu"),
	} {
		want := testutil.PprofTop(t, path)
		got, _ := topByName(t, path)
		if len(got) != len(want) {
			t.Errorf("%s: %d functions, pprof %d", path, len(got), len(want))
		}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s: %s: top %v ns, pprof %v ns", path, name, got[name], w)
			}
		}
	}
}
