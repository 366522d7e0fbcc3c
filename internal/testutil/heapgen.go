package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Heapgen builds testdata/heap/gen, the program that writes real Go
// heap and allocation profiles of known shape, into a temporary directory
// and returns a function that runs it with args and returns the profile it
// wrote (see its package doc for the flags). root is the repository root,
// relative to the calling test's directory.
func Heapgen(t testing.TB, root string) func(args ...string) string {
	t.Helper()
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("cannot run a child program here")
	}
	src := filepath.Join(root, "testdata", "heap", "gen")
	// Read the source so that go test's cache depends on it.
	if _, err := os.ReadFile(filepath.Join(src, "main.go")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "heapgen")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", src, err, out)
	}
	n := 0
	return func(args ...string) string {
		t.Helper()
		n++
		out := filepath.Join(dir, fmt.Sprintf("p%d.pb.gz", n))
		if b, err := exec.Command(bin, append(args, out)...).CombinedOutput(); err != nil {
			t.Fatalf("heapgen %v: %v\n%s", args, err, b)
		}
		return out
	}
}
