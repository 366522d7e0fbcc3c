package binsym

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

type frame struct {
	Func, File string
	Line       int
}

// stackSource writes testdata/stack.go.txt as a module.
func stackSource(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("testdata/stack.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/stack\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// buildStack builds the module in dir with -buildmode=mode.
func buildStack(t *testing.T, dir, mode string) string {
	t.Helper()
	bin := filepath.Join(dir, "stack-"+mode)
	cmd := exec.Command("go", "build", "-buildmode="+mode, "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestFramesMatchRuntime builds a program (methods, a generic type and
// function, calls inlined two deep) and symbolises every byte address of
// its main package's functions twice: with binsym from the binary, and by
// the program itself with runtime.CallersFrames, as runtime/pprof does.
// Every frame must agree, as an ordinary and as a PIE binary.
func TestFramesMatchRuntime(t *testing.T) {
	dir := stackSource(t)
	modes := []string{"exe", "pie"}
	if testing.Short() {
		modes = modes[:1] // a PIE build compiles the standard library again
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			bin := buildStack(t, dir, mode)
			b, err := Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			if b.PIE != (mode == "pie") {
				t.Fatalf("PIE = %v for -buildmode=%s", b.PIE, mode)
			}
			var addrs []uint64
			var in strings.Builder
			for _, s := range b.syms {
				if strings.HasPrefix(s.Name, "main.") {
					for pc := s.Value; pc < s.Value+s.Size; pc++ {
						addrs = append(addrs, pc)
						fmt.Fprintf(&in, "%x\n", pc)
					}
				}
			}
			cmd := exec.Command(bin, strconv.FormatUint(b.TextAddr, 16), mode)
			cmd.Stdin = strings.NewReader(in.String())
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			res, err := b.Resolve(addrs)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(out))
			bad, inlined := 0, 0
			for _, pc := range addrs {
				var want []frame
				if err := dec.Decode(&want); err != nil {
					t.Fatalf("reading the program's frames of %#x: %v", pc, err)
				}
				var got []frame
				for _, f := range res[pc] {
					got = append(got, frame{f.Func, f.File, f.Line})
				}
				inlined += len(got) - 1
				if !slices.Equal(got, want) {
					if bad++; bad <= 5 {
						t.Errorf("%#x: got %+v\nwant %+v", pc, got, want)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d addresses differ", bad, len(addrs))
			}
			if inlined < 100 {
				t.Errorf("only %d inlined frames: the program no longer inlines what it should", inlined)
			}
			t.Logf("%d addresses, %d inlined frames, %d differ", len(addrs), inlined, bad)
		})
	}
}

func TestPrintName(t *testing.T) {
	for in, want := range map[string]string{
		"main.main":                          "main.main",
		"example.com/m/p.(*T).m":             "example.com/m/p.(*T).m",
		"p.F[go.shape.int]":                  "p.F[...]",
		"p.(*L[go.shape.string]).Push":       "p.(*L[...]).Push",
		"p.G[go.shape.int].func1":            "p.G[...].func1",
		"p.F[go.shape.[]uint8,go.shape.int]": "p.F[...]",
	} {
		if got := PrintName(in); got != want {
			t.Errorf("PrintName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "not-elf")
	os.WriteFile(bad, []byte("#!/bin/sh\n"), 0o755)
	for _, path := range []string{bad, filepath.Join(dir, "missing")} {
		if _, err := Open(path); err == nil {
			t.Errorf("Open(%s) succeeded", path)
		}
	}
}

// TestResolveCache: a second Resolve of the same and new PCs answers as
// a fresh Binary does.
func TestResolveCache(t *testing.T) {
	exe := buildStack(t, stackSource(t), "exe")
	b, err := Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	pcs := make([]uint64, 0, 400)
	for _, s := range b.syms[:200] {
		pcs = append(pcs, s.Value, s.Value+s.Size/2)
	}
	first, err := b.Resolve(pcs[:200])
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Resolve(pcs)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fresh.Resolve(pcs)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 300 {
		t.Fatalf("only %d of %d PCs symbolised", len(want), len(pcs))
	}
	for _, pc := range pcs {
		if !slices.Equal(again[pc], want[pc]) {
			t.Errorf("%#x: %v after a first Resolve, %v fresh", pc, again[pc], want[pc])
		}
	}
	for pc, f := range first {
		if !slices.Equal(f, want[pc]) {
			t.Errorf("%#x: %v in the first Resolve, %v fresh", pc, f, want[pc])
		}
	}
}
