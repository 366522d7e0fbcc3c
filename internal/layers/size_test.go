package layers

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxLines is the most lines a non-test Go file of the module may have: a
// file longer than that holds more than one idea (perfassert's
// regression.go grew to 834 lines with the golden test's notes before this
// test existed). Generated files ("Code generated ... DO NOT EDIT.") are
// exempt: they are tables, not code to read.
const maxLines = 700

var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

func TestNoLongFiles(t *testing.T) {
	root := "../.."
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "vendor" || strings.HasPrefix(name, ".")) {
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
		if n := bytes.Count(data, []byte("\n")); n > maxLines && !generated.Match(data) {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s has %d lines, more than %d: split it where its ideas part", rel, n, maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The module has hundreds of Go files; a walk that found few looked
	// in the wrong place.
	if checked < 100 {
		t.Fatalf("checked only %d files", checked)
	}
}
