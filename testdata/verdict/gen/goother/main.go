// Command goother is the go-other workload of the verdict benchmark: a
// gofmt-like pass over real Go sources. For every .go file (tests excluded)
// of a few packages of the Go distribution it runs, it parses the file with
// go/parser, walks the syntax tree with go/ast counting identifiers,
// prints it back with go/printer and checks that the output parses again.
//
//	goother -goroot "$(go env GOROOT)" -rounds N -o FILE.pb.gz
//
// The sources are the ones of the Go toolchain that builds it (the
// generator passes `go env GOROOT`), so a recording is reproducible with
// the same Go version.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hotbudget/hotbudget/testdata/verdict/gen/gorun"
)

var packages = []string{"go/ast", "go/parser", "go/printer", "go/scanner", "text/template/parse", "encoding/json", "strconv"}

type file struct {
	name string
	src  []byte
}

func sources(goroot string) ([]file, error) {
	var files []file
	for _, pkg := range packages {
		dir := filepath.Join(goroot, "src", filepath.FromSlash(pkg))
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		for _, n := range names {
			if strings.HasSuffix(n, "_test.go") {
				continue
			}
			src, err := os.ReadFile(n)
			if err != nil {
				return nil, err
			}
			files = append(files, file{pkg + "/" + filepath.Base(n), src})
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Go sources under %s", goroot)
	}
	return files, nil
}

// format parses, walks, prints and re-parses one file; it returns the
// number of identifiers seen.
func format(fset *token.FileSet, f file, out *bytes.Buffer) (int, error) {
	tree, err := parser.ParseFile(fset, f.name, f.src, parser.ParseComments)
	if err != nil {
		return 0, err
	}
	idents := 0
	ast.Inspect(tree, func(n ast.Node) bool {
		if _, ok := n.(*ast.Ident); ok {
			idents++
		}
		return true
	})
	out.Reset()
	cfg := printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}
	if err := cfg.Fprint(out, fset, tree); err != nil {
		return 0, err
	}
	if _, err := parser.ParseFile(token.NewFileSet(), f.name, out.Bytes(), 0); err != nil {
		return 0, fmt.Errorf("printed %s does not parse: %w", f.name, err)
	}
	return idents, nil
}

func main() {
	out := flag.String("o", "", "write the profile (gzipped pprof) to `file`")
	rounds := flag.Int("rounds", 6, "passes over the sources")
	goroot := flag.String("goroot", "", "the Go installation whose sources to format (go env GOROOT)")
	flag.Parse()
	if *out == "" || *goroot == "" {
		flag.Usage()
		os.Exit(2)
	}
	files, err := sources(*goroot)
	if err != nil {
		fmt.Fprintln(os.Stderr, "goother:", err)
		os.Exit(1)
	}
	err = gorun.Profile(*out, "go-other", "op", func() int {
		var buf bytes.Buffer
		ops := 0
		for r := 0; r < *rounds; r++ {
			fset := token.NewFileSet()
			for _, f := range files {
				if _, err := format(fset, f, &buf); err != nil {
					fmt.Fprintln(os.Stderr, "goother:", err)
					os.Exit(1)
				}
				ops++
			}
		}
		return ops
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "goother:", err)
		os.Exit(1)
	}
}
