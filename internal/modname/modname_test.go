package modname

import (
	"debug/elf"
	"debug/gosym"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/suggest"
)

func TestPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"example.com/m":          "example.com/m",
		"gopkg.in/yaml.v3":       "gopkg.in/yaml%2ev3",
		"gopkg.in/yaml.v3/sub":   "gopkg.in/yaml.v3/sub",
		"example.com/m/a.b":      "example.com/m/a%2eb",
		"example.com":            "example%2ecom",
		"ex ample.com/a%b/\"q\"": "ex%20ample.com/a%25b/%22q%22",
		"example.com/é":          "example.com/%c3%a9",
		"example.com/x\x7f":      "example.com/x%7f",
	} {
		if got := Prefix(in); got != want {
			t.Errorf("Prefix(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPattern covers the forms of names the toolchain writes for a
// module's functions, and the names of other modules that must not match.
func TestPattern(t *testing.T) {
	cases := []struct {
		mods []string
		name string
		want bool
	}{
		{[]string{"gopkg.in/yaml.v3"}, "gopkg.in/yaml%2ev3.yaml_parser_scan_to_next_token", true},
		{[]string{"gopkg.in/yaml.v3"}, "gopkg.in/yaml%2ev3_test.(*S).TestUnmarshal", true},
		{[]string{"gopkg.in/yaml.v3"}, "gopkg.in/yaml%2ev3.(*decoder).unmarshal.func1", true},
		{[]string{"gopkg.in/yaml.v3"}, "gopkg.in/yaml.v3/sub.F", true},
		{[]string{"gopkg.in/yaml.v3"}, "gopkg.in/yaml.v3/sub_test.X", true},
		{[]string{"gopkg.in/yaml.v3"}, "gopkg.in/yaml.v3/a%2eb.X", true},
		// Not a name the toolchain writes for this module: it is package
		// gopkg.in/yaml's v3.F.
		{[]string{"gopkg.in/yaml.v3"}, "gopkg.in/yaml.v3.F", false},
		{[]string{"gopkg.in/yaml.v3"}, "gopkg.in/yaml%2ev2.F", false},
		{[]string{"gopkg.in/yaml.v3"}, "gopkg.in/yaml%2ev30.F", false},
		{[]string{"gopkg.in/yaml.v3"}, "gopkg.in/yaml.v30/sub.F", false},
		{[]string{"example.com/m"}, "example.com/m.F", true},
		{[]string{"example.com/m"}, "example.com/m_test.TestX", true},
		{[]string{"example.com/m"}, "example.com/m/sub_test.X", true},
		{[]string{"example.com/m"}, "example.com/m/a/b/c.(*T).M", true},
		{[]string{"example.com/m"}, "example.com/m.Map[...]", true},
		{[]string{"example.com/m"}, "example.com/m.(*T[...]).M", true},
		{[]string{"example.com/m"}, "example.com/m.F[go.shape.int]", true},
		{[]string{"example.com/m"}, "example.com/m.(*T[go.shape.string]).Add", true},
		{[]string{"example.com/m"}, "example.com/m.F.func1.1", true},
		{[]string{"example.com/m"}, "example.com/m.init.0", true},
		{[]string{"example.com/m"}, "example.com/m..dict.Map[int]", true},
		{[]string{"example.com/m"}, "example.com/mod.F", false},
		{[]string{"example.com/mod"}, "example.com/mod2.F", false},
		{[]string{"example.com/mod"}, "example.com/mod2/sub.F", false},
		{[]string{"example.com/mod"}, "example.com/mod_testing.F", false},
		{[]string{"example.com/mod"}, "example.com/mod_test_x.F", false},
		{[]string{"example.com/m"}, "slices.SortFunc[go.shape.[]example.com/m.T]", false},
		{[]string{"example.com/m"}, "type:.eq.example.com/m.T", false},
		{[]string{"example.com/m"}, "runtime.mallocgc", false},
		{[]string{"example.com/m"}, "main.main", false},
		{[]string{"example.com/m"}, "xexample.com/m.F", false},
		// Another module whose path extends this one's with a dot.
		{[]string{"example.com/x"}, "example.com/x.v3/sub.F", false},
		{[]string{"example.com/x"}, "example.com/x.v3/sub.F[go.shape.int]", false},
		{[]string{"example.com/x"}, "example.com/x.F[go.shape.struct { example.com/y.T }]", true},
		{[]string{"example.com/x"}, "example.com/x.(*T[example.com/y.U]).M", true},
		// Metacharacters in a path are literal.
		{[]string{"example.com/a+b"}, "example.com/a+b.F", true},
		{[]string{"example.com/a+b"}, "example.com/aab.F", false},
		// A workspace: either module.
		{[]string{"example.com/a", "gopkg.in/yaml.v3"}, "example.com/a.F", true},
		{[]string{"example.com/a", "gopkg.in/yaml.v3"}, "gopkg.in/yaml%2ev3.F", true},
		{[]string{"example.com/a", "gopkg.in/yaml.v3"}, "example.com/b.F", false},
	}
	for _, c := range cases {
		if got := Pattern(c.mods).MatchString(c.name); got != c.want {
			t.Errorf("Pattern(%q).MatchString(%q) = %v, want %v (%s)", c.mods, c.name, got, c.want, Pattern(c.mods))
		}
	}
	if Pattern(nil) != nil || Pattern([]string{""}) != nil {
		t.Error("Pattern of no module is not nil")
	}
}

// TestPatternRealBinary builds a module whose last path element has a dot
// (example.com/x.v3: a generic function and type, methods, a closure, a
// nested package, an external test package), reads the function names
// its test binary's symbol table holds (those runtime/pprof and callgrind
// report), and checks that Pattern matches each of the module's and none
// of the others'.
func TestPatternRealBinary(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/x.v3\n\ngo 1.22\n",
		"x.go": `package x

type T[K comparable] struct{ m map[K]int }

//go:noinline
func (t *T[K]) Add(k K) { t.m[k]++ }

//go:noinline
func Map[A, B any](in []A, f func(A) B) []B {
	var out []B
	for _, a := range in {
		out = append(out, f(a))
	}
	return out
}

type S struct{ n int }

//go:noinline
func (s *S) Inc() func() int { return func() int { s.n++; return s.n } }
`,
		"sub.v1/sub.go": `package sub

//go:noinline
func Sum(xs []int) (n int) {
	for _, x := range xs {
		n += x
	}
	return n
}
`,
		"x_test.go": `package x_test

import (
	"testing"

	x "example.com/x.v3"
	sub "example.com/x.v3/sub.v1"
)

func TestNames(t *testing.T) {
	tt := &x.T[string]{}
	_ = tt
	r := x.Map([]int{1}, func(i int) int { return i + sub.Sum([]int{i}) })
	s := &x.S{}
	t.Log(s.Inc()(), r)
}
`,
		"in_test.go": `package x

import "testing"

func TestIn(t *testing.T) { (&T[int]{m: map[int]int{}}).Add(1) }
`,
	}
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "x.test")
	cmd := exec.Command(goBin, "test", "-c", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local", "GOPROXY=off", "GO111MODULE=on")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	names := binaryFuncs(t, bin)
	re := Pattern([]string{"example.com/x.v3"})
	want := []string{
		"example.com/x%2ev3.(*T[go.shape.int]).Add",
		"example.com/x%2ev3.Map[go.shape.int,go.shape.int]",
		"example.com/x%2ev3.(*S).Inc",
		"example.com/x%2ev3.(*S).Inc.func1",
		"example.com/x%2ev3.TestIn",
		"example.com/x%2ev3_test.TestNames",
		"example.com/x%2ev3_test.TestNames.func1",
		"example.com/x.v3/sub%2ev1.Sum",
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("the binary has no function %s (the toolchain names it otherwise?)", w)
		}
	}
	own := 0
	for _, n := range names {
		mine := strings.Contains(n, "example.com/x") && !strings.HasPrefix(n, "type:") && !strings.HasPrefix(n, "go:")
		if got := re.MatchString(n); got != mine {
			t.Errorf("Pattern(example.com/x.v3).MatchString(%q) = %v, want %v", n, got, mine)
		}
		if mine {
			own++
		}
	}
	if own < len(want) {
		t.Errorf("%d functions of the module in the binary, want at least %d", own, len(want))
	}
	// A module sharing the prefix judges none of them.
	for _, other := range []string{"example.com/x", "example.com/x.v", "example.com/x.v31"} {
		for _, n := range names {
			if Pattern([]string{other}).MatchString(n) {
				t.Errorf("Pattern(%s) matches %s", other, n)
			}
		}
	}
}

// binaryFuncs is the function names of the ELF binary's symbol table
// (debug/gosym: the runtime's own table, which runtime/pprof reads).
func binaryFuncs(t *testing.T, bin string) []string {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Skipf("not an ELF binary here: %v", err)
	}
	defer f.Close()
	sec := func(name string) []byte {
		s := f.Section(name)
		if s == nil {
			t.Fatalf("%s: no section %s", bin, name)
		}
		b, err := s.Data()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	text := f.Section(".text")
	if text == nil {
		t.Fatalf("%s: no .text", bin)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(sec(".gopclntab"), text.Addr))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fn := range tab.Funcs {
		names = append(names, fn.Name)
	}
	return names
}

func TestUnmatched(t *testing.T) {
	names := []suggest.Candidate{
		{Name: "runtime.mallocgc", Weight: 50},
		{Name: "gopkg.in/yaml%2ev3.yaml_parser_scan", Weight: 10},
		{Name: "runtime.memmove", Weight: 40},
		{Name: "runtime.mallocgc", Weight: 50},
	}
	got := Unmatched("the functions of gopkg.in/yaml.v2", []string{"gopkg.in/yaml.v2"}, "", names)
	for _, want := range []string{"the functions of gopkg.in/yaml.v2", "none of the 3 functions", "nothing was judged", "closest names: gopkg.in/yaml%2ev3.yaml_parser_scan"} {
		if !strings.Contains(got, want) {
			t.Errorf("Unmatched = %q, want it to contain %q", got, want)
		}
	}
	got = Unmatched("--gate ^zzz", nil, "^zzz", names[:1:1])
	if !strings.Contains(got, "heaviest names: runtime.mallocgc") {
		t.Errorf("Unmatched with nothing close = %q, want the heaviest names", got)
	}
	if got := Unmatched("--gate x", nil, "x", nil); !strings.Contains(got, "none of the 0 functions") {
		t.Errorf("Unmatched of no names = %q", got)
	}
	if got := Unmatched("--gate x", nil, "x", []suggest.Candidate{{Name: "a\x1b[31mb"}}); strings.Contains(got, "\x1b") {
		t.Errorf("Unmatched = %q: a name's escape sequence is not escaped", got)
	}
}
