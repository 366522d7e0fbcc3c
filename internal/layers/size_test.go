package layers

import (
	"bytes"
	"path/filepath"
	"regexp"
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
	root := filepath.Join("..", "..")
	eachSource(t, root, "", func(path string, data []byte) {
		if n := bytes.Count(data, []byte("\n")); n > maxLines && !generated.Match(data) {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s has %d lines, more than %d: split it where its ideas part", rel, n, maxLines)
		}
	})
}
