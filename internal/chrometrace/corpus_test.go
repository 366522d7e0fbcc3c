package chrometrace

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

const corpus = "../../testdata/corpus"

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func parseFile(t testing.TB, path, view string) (*profile.Profile, error) {
	t.Helper()
	return Parse(bytes.NewReader(readFile(t, path)), pbuild.Options{Name: path, View: view})
}

func corpusFiles(t testing.TB) []string {
	var files []string
	for _, dir := range []string{"chrome-trace", "trace-event"} {
		m, err := filepath.Glob(filepath.Join(corpus, dir, "*"))
		if err != nil || len(m) == 0 {
			t.Fatalf("no corpus files in %s: %v", dir, err)
		}
		files = append(files, m...)
	}
	return files
}
