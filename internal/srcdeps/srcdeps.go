// Package srcdeps lets a test that runs a program built from this module's
// sources (the README and workflow tests build cmd/hotbudget themselves)
// depend on those sources in go test's cache.
//
// go test caches a passing result and reuses it while the test binary, its
// flags and the files and environment variables the test consulted are
// unchanged. A binary the test builds in a subprocess is invisible to it:
// a change to the diff package would leave the README test "ok (cached)"
// although its commands now print something else. Reading every Go source
// file of the module, as Track does, makes the test consult them.
package srcdeps

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Track opens every .go file and go.mod/go.sum under root (skipping
// testdata, hidden and vendor directories) so that a change to any of them
// invalidates the calling test's cached result.
func Track(t testing.TB, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum" {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			return f.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("srcdeps: %v", err)
	}
}
