package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestNoFuncVarsBetweenPackages: no package declares an exported
// package-level variable of function type, the one kind another package
// can set. indexload's Wrap and Unwrap were such variables, set by
// analysis's init for loaders, diff and perfassert to call: the wiring was
// visible only by reading every package, and a call before the init, or a
// second setter, broke every caller. Code that needs another package's
// internals reaches them through an internal package that owns the type
// (internal/indexload owns analysis.Index's data). Unexported test seams
// (a variable a package's own tests replace) are not concerned. The
// check reads declarations: a variable whose type is a func type or whose
// value is a function literal.
func TestNoFuncVarsBetweenPackages(t *testing.T) {
	fset := token.NewFileSet()
	eachSource(t, filepath.Join("..", ".."), "", func(path string, data []byte) {
		f, err := parser.ParseFile(fset, path, data, 0)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				_, isFunc := vs.Type.(*ast.FuncType)
				for i, n := range vs.Names {
					lit := false
					if i < len(vs.Values) {
						_, lit = vs.Values[i].(*ast.FuncLit)
					}
					if n.IsExported() && (isFunc || lit) {
						t.Errorf("%s: package-level function variable %s can be set from another package: pass the function, or let an internal package own what it reaches", fset.Position(n.Pos()), n.Name)
					}
				}
			}
		}
	})
}
