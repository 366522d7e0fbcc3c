package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputsRefuseInputs: an output file that is one of the inputs (by
// name, glob, another path, a symlink or a hard link) is refused with exit
// 2 before anything is read or written, and the input is left as it was.
func TestOutputsRefuseInputs(t *testing.T) {
	dir := t.TempDir()
	inputs := map[string][]byte{}
	for _, name := range []string{"base.folded", "head.folded"} {
		b, err := os.ReadFile(filepath.Join("../../testdata/cli", name))
		if err != nil {
			t.Fatal(err)
		}
		inputs[name] = b
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("head.folded", filepath.Join(dir, "link.folded")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "base.folded"), filepath.Join(dir, "hard.folded")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	hb := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(args, nil, &stdout, &stderr, func(string) string { return "" })
		return code, stderr.String()
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"diff", "--out", "base.folded", "base.folded", "--", "head.folded"}, "--out base.folded is the input base.folded"},
		{[]string{"diff", "--format", "html", "--out", "./sub/../head.folded", "base.folded", "--", "head.folded"}, "--out ./sub/../head.folded is the input head.folded"},
		{[]string{"diff", "--html", "link.folded", "base.folded", "--", "head.folded"}, "--html link.folded is the input head.folded"},
		{[]string{"diff", "--pprof", "hard.folded", "base.folded", "--", "head.folded"}, "--pprof hard.folded is the input base.folded"},
		{[]string{"diff", "--pprof", "head.folded", "base.folded", "--", "*.folded"}, "--pprof head.folded is the input head.folded"},
		{[]string{"top", "--out", "base.folded", "base.folded"}, "--out base.folded is the input base.folded"},
		{[]string{"top", "base.folded", "--out", "hard.folded"}, "--out hard.folded is the input base.folded"},
		{[]string{"convert", "--to", "folded", "head.folded", "link.folded"}, "OUT link.folded is the input head.folded"},
	} {
		if err := os.MkdirAll("sub", 0o755); err != nil {
			t.Fatal(err)
		}
		code, stderr := hb(c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, want 2 and %q\n%s", c.args, code, c.want, stderr)
		}
		for name, want := range inputs {
			if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%q changed the input %s (%v)", c.args, name, err)
			}
		}
	}
	// Outputs that are no input are written.
	if code, stderr := hb("diff", "--out", "report.md", "--format", "markdown", "base.folded", "--", "head.folded"); code != exitFail {
		t.Errorf("diff --out report.md: exit %d, want 1\n%s", code, stderr)
	}
	if code, stderr := hb("convert", "head.folded", "head.pb.gz"); code != exitOK {
		t.Errorf("convert to a new file: exit %d\n%s", code, stderr)
	}
	for _, name := range []string{"report.md", "head.pb.gz"} {
		if _, err := os.Stat(name); err != nil {
			t.Error(err)
		}
	}
}
