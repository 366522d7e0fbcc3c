package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"testing"
)

// TestDocOptionsExist: every option a comment cites by its constructor's
// name (WithSelection, diff.WithOps(...)) is a function the module
// declares. Doc comments that cited options which did not exist
// (diff's WithAssume, for WithAssumption) told users to call nothing.
func TestDocOptionsExist(t *testing.T) {
	root := filepath.Join("..", "..")
	declared := map[string]bool{}
	type cite struct {
		pkg, name string // pkg: the qualifier, "" for none
		at        token.Position
	}
	var cites []cite
	fset := token.NewFileSet()
	call := regexp.MustCompile(`(?:\b(\w+)\.)?\b(With[A-Z]\w*)\b`)
	ownPkgs := map[string]bool{}
	eachSource(t, root, "", func(path string, data []byte) {
		f, err := parser.ParseFile(fset, path, data, parser.ParseComments)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		ownPkgs[f.Name.Name] = true
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				declared[fd.Name.Name] = true
			}
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				for _, m := range call.FindAllStringSubmatchIndex(c.Text, -1) {
					pkg := ""
					if m[2] >= 0 {
						pkg = c.Text[m[2]:m[3]]
					}
					cites = append(cites, cite{pkg, c.Text[m[4]:m[5]], fset.Position(c.Pos())})
				}
			}
		}
	})
	if len(cites) < 30 {
		t.Fatalf("only %d cited options found: the scan looks in the wrong place", len(cites))
	}
	for _, c := range cites {
		if c.pkg != "" && !ownPkgs[c.pkg] {
			continue // another module's option (runtime/trace.WithRegion)
		}
		if !declared[c.name] {
			t.Errorf("%s: the comment cites %s, which the module does not declare", c.at, c.name)
		}
	}
}
