// Package apicheck holds the test that records the module's exported
// surface in api/hotbudget.txt, as Go records its own in api/*.txt, so
// that an exported name added, removed or changed is a decision seen in
// review rather than an accident: the test fails until the file is
// rewritten with
//
//	go test ./internal/apicheck -run API -update
//
// The surface is that of every package another module can import: all but
// internal packages, commands (package main) and the example programs
// under examples/. It is computed from the sources alone (go/parser),
// with the build constraints of linux/amd64 so that it reads the same on
// every machine; a line per exported name, in the form of Go's api files:
//
//	pkg github.com/hotbudget/hotbudget/limits, func Check(*profile.Profile, string, Limit, ...Option) (*Result, error)
package apicheck

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/atomicfile"
	"github.com/hotbudget/hotbudget/internal/srcdeps"
)

var update = flag.Bool("update", false, "rewrite api/hotbudget.txt with the exported surface of the sources")

const (
	module  = "github.com/hotbudget/hotbudget"
	apiFile = "../../api/hotbudget.txt"
)

func TestAPI(t *testing.T) {
	srcdeps.Track(t, "../..")
	got := surface(t, "../..")
	if *update {
		if err := os.MkdirAll(filepath.Dir(apiFile), 0o755); err != nil {
			t.Fatal(err)
		}
		err := atomicfile.Write(apiFile, func(f *os.File) error {
			_, err := f.WriteString(got)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", apiFile)
		return
	}
	want, err := os.ReadFile(apiFile)
	if err != nil {
		t.Fatalf("%v\nrecord the exported surface with: go test ./internal/apicheck -run API -update", err)
	}
	added, removed := lineDiff(string(want), got)
	if len(added)+len(removed) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString("the exported API differs from api/hotbudget.txt:\n")
	for _, l := range removed {
		fmt.Fprintf(&b, "  - %s\n", l)
	}
	for _, l := range added {
		fmt.Fprintf(&b, "  + %s\n", l)
	}
	b.WriteString("if the change is intended, record it with: go test ./internal/apicheck -run API -update (and commit api/hotbudget.txt)")
	t.Error(b.String())
}

// lineDiff returns the lines of got that want lacks and those of want that
// got lacks (both files are sorted sets of lines).
func lineDiff(want, got string) (added, removed []string) {
	set := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			if l != "" {
				m[l] = true
			}
		}
		return m
	}
	w, g := set(want), set(got)
	for l := range g {
		if !w[l] {
			added = append(added, l)
		}
	}
	for l := range w {
		if !g[l] {
			removed = append(removed, l)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}

type listed struct {
	ImportPath, Name, Dir string
}

// surface is the exported API of the module's importable packages, one
// sorted line per exported name, ending in a newline.
func surface(t *testing.T, root string) string {
	cmd := exec.Command("go", "list", "-json=ImportPath,Name,Dir", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled, ctx.BuildTags = "linux", "amd64", false, nil
	var lines []string
	pkgs := 0
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if !public(p) {
			continue
		}
		pkgs++
		ls, err := pkgAPI(&ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, ls...)
	}
	if pkgs < 5 {
		t.Fatalf("only %d public packages listed", pkgs)
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	return strings.Join(lines, "\n") + "\n"
}

// public reports whether other modules can import p as a library.
func public(p listed) bool {
	rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
	if p.Name == "main" || rel == "examples" || strings.HasPrefix(rel, "examples/") {
		return false
	}
	for _, elem := range strings.Split(rel, "/") {
		if elem == "internal" {
			return false
		}
	}
	return true
}

// pkgAPI parses the package's non-test files that build on ctx and lists
// its exported names.
func pkgAPI(ctx *build.Context, p listed) ([]string, error) {
	ents, err := os.ReadDir(p.Dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	a := &api{prefix: "pkg " + p.ImportPath + ", "}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := ctx.MatchFile(p.Dir, name); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if f.Name.Name != p.Name {
			continue
		}
		for _, d := range f.Decls {
			a.decl(d)
		}
	}
	return a.lines, nil
}

type api struct {
	prefix string
	lines  []string
}

func (a *api) add(format string, args ...any) {
	a.lines = append(a.lines, a.prefix+fmt.Sprintf(format, args...))
}

func (a *api) decl(d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return
		}
		if d.Recv == nil {
			a.add("func %s%s", d.Name.Name, signature(d.Type))
			return
		}
		recv := d.Recv.List[0].Type
		if base := baseType(recv); base == "" || !ast.IsExported(base) {
			return
		}
		a.add("method (%s) %s%s", expr(recv), d.Name.Name, signature(d.Type))
	case *ast.GenDecl:
		var typ ast.Expr // a const group's type, repeated implicitly
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				a.typeSpec(s)
			case *ast.ValueSpec:
				kind := "var"
				if d.Tok == token.CONST {
					kind = "const"
					if s.Type != nil || len(s.Values) > 0 {
						typ = s.Type
					}
				} else {
					typ = s.Type
				}
				for i, n := range s.Names {
					if !n.IsExported() {
						continue
					}
					line := kind + " " + n.Name
					if typ != nil {
						line += " " + expr(typ)
					}
					// A constant's value is part of its API (written
					// out where the source spells it, not an implicit
					// iota repetition); a variable's is not.
					if kind == "const" && i < len(s.Values) {
						line += " = " + expr(s.Values[i])
					}
					a.add("%s", line)
				}
			}
		}
	}
}

func (a *api) typeSpec(s *ast.TypeSpec) {
	if !s.Name.IsExported() {
		return
	}
	name := s.Name.Name
	if s.TypeParams != nil {
		name += "[" + fields(s.TypeParams, true) + "]"
	}
	if s.Assign.IsValid() {
		a.add("type %s = %s", name, expr(s.Type))
		return
	}
	switch t := s.Type.(type) {
	case *ast.StructType:
		a.add("type %s struct", name)
		for _, f := range t.Fields.List {
			if len(f.Names) == 0 {
				if ast.IsExported(baseType(f.Type)) {
					a.add("type %s struct, embedded %s", name, expr(f.Type))
				}
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					a.add("type %s struct, %s %s", name, n.Name, expr(f.Type))
				}
			}
		}
	case *ast.InterfaceType:
		a.add("type %s interface", name)
		unexported := false
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 {
				a.add("type %s interface, %s", name, expr(m.Type))
				continue
			}
			for _, n := range m.Names {
				if !n.IsExported() {
					unexported = true
					continue
				}
				a.add("type %s interface, %s%s", name, n.Name, signature(m.Type.(*ast.FuncType)))
			}
		}
		if unexported {
			a.add("type %s interface, unexported methods", name)
		}
	default:
		a.add("type %s %s", name, expr(s.Type))
	}
}

// signature is a function's parameters and results, without their names.
func signature(ft *ast.FuncType) string {
	s := "(" + fields(ft.Params, false) + ")"
	if ft.Results == nil || len(ft.Results.List) == 0 {
		return s
	}
	res := fields(ft.Results, false)
	if len(ft.Results.List) == 1 && len(ft.Results.List[0].Names) <= 1 {
		return s + " " + res
	}
	return s + " (" + res + ")"
}

// fields lists a field list's types, one per name; with names (type
// parameters), "K comparable, V any".
func fields(fl *ast.FieldList, named bool) string {
	if fl == nil {
		return ""
	}
	var parts []string
	for _, f := range fl.List {
		t := expr(f.Type)
		n := max(len(f.Names), 1)
		for i := range n {
			if named && len(f.Names) > 0 {
				parts = append(parts, f.Names[i].Name+" "+t)
			} else {
				parts = append(parts, t)
			}
		}
	}
	return strings.Join(parts, ", ")
}

// baseType is the name of a receiver's or embedded field's type, without
// pointer, package or type arguments.
func baseType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.SelectorExpr:
			return t.Sel.Name
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func expr(e ast.Expr) string { return types.ExprString(e) }

// TestLines pins the form of the lines on a small package written out by
// hand: what is listed, what is not, and how.
func TestLines(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "time"

const (
	A Kind = "a"
	B
	c Kind = "c"
)

const Max = 1 << 20

var Err error

type Kind string

type Pair[K comparable, V any] struct {
	Key K
	val V
	time.Duration
}

type Opt interface {
	Name() string
	apply()
}

type Alias = Kind

func New(a, b int, rest ...string) (*Pair[string, int], error) { return nil, nil }

func (k Kind) String() string { return string(k) }
func (k *Kind) set()          {}

type hidden struct{}

func (hidden) Exported() {}
`
	other := "//go:build windows\n\npackage p\n\nfunc OnlyWindows() {}\n"
	for name, s := range map[string]string{"p.go": src, "p_windows.go": other, "p_test.go": "package p\n\nfunc Test() {}\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.BuildTags = "linux", "amd64", nil
	got, err := pkgAPI(&ctx, listed{ImportPath: "example.com/p", Name: "p", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{
		"pkg example.com/p, const A Kind = \"a\"",
		"pkg example.com/p, const B Kind",
		"pkg example.com/p, const Max = 1 << 20",
		"pkg example.com/p, func New(int, int, ...string) (*Pair[string, int], error)",
		"pkg example.com/p, method (Kind) String() string",
		"pkg example.com/p, type Alias = Kind",
		"pkg example.com/p, type Kind string",
		"pkg example.com/p, type Opt interface",
		"pkg example.com/p, type Opt interface, Name() string",
		"pkg example.com/p, type Opt interface, unexported methods",
		"pkg example.com/p, type Pair[K comparable, V any] struct",
		"pkg example.com/p, type Pair[K comparable, V any] struct, Key K",
		"pkg example.com/p, type Pair[K comparable, V any] struct, embedded time.Duration",
		"pkg example.com/p, var Err error",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestOptionNames checks the rule the README states for option names on
// the recorded surface (TestAPI keeps it equal to the sources): in the
// packages whose options set a setting of a computation, every function
// that returns an option is With or Without + the setting; in perfassert
// and limits, whose options are words of an assertion or a capture, none
// is, but WithSelection, the one selection option, which is named alike
// in every package that takes an analysis.Selection.
func TestOptionNames(t *testing.T) {
	data, err := os.ReadFile(apiFile)
	if err != nil {
		t.Fatal(err)
	}
	bad := optionNameViolations(string(data))
	for _, v := range bad {
		t.Error(v)
	}
	// The rule must have something to check: the file lists options.
	if n := strings.Count(string(data), "Option\n"); n < 20 {
		t.Errorf("only %d option functions in %s", n, apiFile)
	}
}

// optionNameViolations lists the lines of an API file whose option
// function breaks the naming rule, with why.
func optionNameViolations(api string) []string {
	words := map[string]bool{module + "/perfassert": true, module + "/limits": true}
	var bad []string
	for _, l := range strings.Split(api, "\n") {
		pkg, decl, ok := strings.Cut(strings.TrimPrefix(l, "pkg "), ", func ")
		if !ok || !strings.HasSuffix(decl, "Option") {
			continue
		}
		name, _, _ := strings.Cut(decl, "(")
		with := strings.HasPrefix(name, "With")
		switch {
		case name == "WithSelection":
		case words[pkg] && with:
			bad = append(bad, l+": an assertion's option is a word of the test line, not With...")
		case !words[pkg] && !with:
			bad = append(bad, l+": an option that sets a setting is With... or Without...")
		}
	}
	return bad
}

// TestOptionNameRule: the rule's check on lines written out by hand.
func TestOptionNameRule(t *testing.T) {
	api := strings.Join([]string{
		"pkg " + module + "/diff, func WithAlpha(float64) Option",
		"pkg " + module + "/diff, func WithoutHeadline() Option",
		"pkg " + module + "/diff, func WithSelection(analysis.Selection) Option",
		"pkg " + module + "/diff, func Alpha(float64) Option",
		"pkg " + module + "/loaders, func Format(Format) Option",
		"pkg " + module + "/perfassert, func PerIteration() Option",
		"pkg " + module + "/perfassert, func MinSamples(int) CaptureOption",
		"pkg " + module + "/perfassert, func WithSelection(analysis.Selection) Option",
		"pkg " + module + "/perfassert, func WithRegexp() Option",
		"pkg " + module + "/limits, func WithNamed(string) Option",
		"pkg " + module + "/diff, func Compare([]*profile.Profile, []*profile.Profile, ...Option) (*Report, error)",
	}, "\n")
	got := optionNameViolations(api)
	var names []string
	for _, l := range got {
		_, decl, _ := strings.Cut(l, ", func ")
		name, _, _ := strings.Cut(decl, "(")
		names = append(names, name)
	}
	if want := []string{"Alpha", "Format", "WithRegexp", "WithNamed"}; !slices.Equal(names, want) {
		t.Errorf("violations %q, want %q", names, want)
	}
}
