package callgrind

import (
	"path/filepath"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
)

// BenchmarkParse reads the real file with --dump-instr=yes and 13 events.
func BenchmarkParse(b *testing.B) {
	testutil.BenchParse(b, Parse, readGz(b, filepath.Join(dir, "c-instr.callgrind.gz")))
}

// BenchmarkParseGo reads the real file of a Go program.
func BenchmarkParseGo(b *testing.B) {
	testutil.BenchParse(b, Parse, readGz(b, filepath.Join(dir, "go.callgrind.gz")))
}
