package layers

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// eachSource calls fn with every non-test Go file of the module under
// root, by path, and its contents, skipping hidden and vendor directories
// and the directory skip (none when ""). It fails the test when the walk
// fails or finds fewer than 100 files: a walk that found few looked in the
// wrong place.
func eachSource(t *testing.T, root, skip string, fn func(path string, data []byte)) {
	t.Helper()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "vendor" || path == skip) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		fn(path, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d Go files checked", checked)
	}
}
