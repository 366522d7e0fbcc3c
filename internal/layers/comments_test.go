package layers

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/meta"
)

// TestOnlyMetaSpellsComments keeps the comments hotbudget stores in a
// profile in one package: no Go file outside internal/meta, tests aside,
// spells one of their prefixes, so every other package writes and reads
// them through meta's accessors (meta.Set, meta.AppendWarning, meta.Format,
// ...) and a change of their form is made in one place.
func TestOnlyMetaSpellsComments(t *testing.T) {
	root := filepath.Join("..", "..")
	own := filepath.Join(root, "internal", "meta")
	prefixes := meta.Prefixes()
	if len(prefixes) < 7 {
		t.Fatalf("meta.Prefixes lists %d prefixes, want every one (at least 7)", len(prefixes))
	}
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || path == own) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for _, p := range prefixes {
			if strings.Contains(string(b), strings.TrimSpace(p)) {
				t.Errorf("%s spells the profile comment %q: write and read it through internal/meta", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d Go files checked", checked)
	}
}
