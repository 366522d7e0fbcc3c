package layers

import (
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
	eachSource(t, root, own, func(path string, b []byte) {
		for _, p := range prefixes {
			if strings.Contains(string(b), strings.TrimSpace(p)) {
				t.Errorf("%s spells the profile comment %q: write and read it through internal/meta", path, p)
			}
		}
	})
}
