package callgrind

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

const dir = "../../testdata/callgrind"

// files are the real callgrind files of testdata/callgrind.
var files = []string{"c", "c-nocompress", "c-instr", "c-parts", "c-threads", "go"}

func readGz(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseFile(t testing.TB, name string) *profile.Profile {
	t.Helper()
	p, err := Parse(bytes.NewReader(readGz(t, filepath.Join(dir, name+".callgrind.gz"))), pbuild.Options{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	testutil.CheckProfile(t, name, p)
	return p
}

// annotated is callgrind_annotate's table: costs per event by
// "file:function" (the object it prints after them left out).
type annotated struct {
	events []string
	rows   map[string][]int64
}

// parseAnnotate reads the output of callgrind_annotate --threshold=100
// --show-percs=no --auto=no [--inclusive=yes].
func parseAnnotate(t testing.TB, out string, known map[string]bool) annotated {
	t.Helper()
	a := annotated{rows: make(map[string][]int64)}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	inTable := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Events recorded:") {
			a.events = strings.Fields(strings.TrimPrefix(line, "Events recorded:"))
		}
		if strings.HasSuffix(line, " file:function") {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(line, "---") {
			continue
		}
		if strings.TrimSpace(line) == "" {
			break
		}
		rest := strings.TrimLeft(line, " ")
		vals := make([]int64, len(a.events))
		for i := range a.events {
			tok, r, _ := strings.Cut(rest, " ")
			rest = strings.TrimLeft(r, " ")
			if tok == "." {
				continue
			}
			v, err := strconv.ParseInt(strings.ReplaceAll(tok, ",", ""), 10, 64)
			if err != nil {
				t.Fatalf("callgrind_annotate line %q: %v", line, err)
			}
			vals[i] = v
		}
		name := rest
		for !known[name] {
			i := strings.LastIndex(name, " [")
			if i < 0 {
				t.Fatalf("callgrind_annotate prints %q, which the profile does not have", rest)
			}
			name = name[:i]
		}
		if _, dup := a.rows[name]; dup {
			t.Fatalf("callgrind_annotate prints %q twice", name)
		}
		a.rows[name] = vals
	}
	if len(a.events) == 0 || len(a.rows) == 0 {
		t.Fatalf("no table in callgrind_annotate's output:\n%s", out)
	}
	return a
}

// ours is the profile's self and total per "file:function" and event.
type ours struct {
	self, total map[string][]int64
}

func key(f analysis.Function) string {
	file := f.File
	if file == "" {
		file = "???"
	}
	return file + ":" + f.Name
}

func tables(t testing.TB, p *profile.Profile, events []string) ours {
	t.Helper()
	o := ours{self: make(map[string][]int64), total: make(map[string][]int64)}
	for i, e := range events {
		tab, err := analysis.Functions(p, analysis.Selection{SampleType: EventType(e)})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range tab.Functions {
			k := key(f)
			if o.self[k] == nil {
				o.self[k] = make([]int64, len(events))
				o.total[k] = make([]int64, len(events))
			}
			o.self[k][i] += int64(f.Self)
			o.total[k][i] += int64(f.Total)
		}
	}
	return o
}

// knownNames are the "file:function" keys of p's functions.
func knownNames(p *profile.Profile) map[string]bool {
	known := make(map[string]bool)
	for _, f := range p.Function {
		file := f.Filename
		if file == "" {
			file = "???"
		}
		known[file+":"+f.Name] = true
	}
	return known
}

// cyclic returns the functions ("file:function") on a call cycle in any
// group of the file, as the parser sees them.
func cyclic(t testing.TB, data []byte) map[string]bool {
	t.Helper()
	ps := &parser{nodeOf: make(map[[2]string]int32), intern: make(map[string]string), groupOf: make(map[string]*group),
		cur: -1, main: -1, callee: -1, npos: 1, warn: func(string, ...any) {}, own: newOwnMeter()}
	for i := range ps.names {
		ps.names[i] = make(map[int64]string)
	}
	if err := ps.read(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]bool)
	b := &builder{ps: ps, local: newLocal(len(ps.nodes))}
	for _, g := range ps.groups {
		gr, err := b.graphOf(g)
		if err != nil {
			t.Fatal(err)
		}
		comp, order := sccs(gr)
		for a := range gr.from {
			if comp[gr.from[a]] == comp[gr.to[a]] {
				for _, v := range order[comp[gr.from[a]]] {
					nd := ps.nodes[gr.glob[v]]
					out[nd.file+":"+nd.fn] = true
				}
			}
		}
	}
	return out
}

// differs lists, per file, the functions whose self or total cannot equal
// callgrind_annotate's, and why (see the package documentation and
// testdata/callgrind/README.md).
var differs = map[string]map[string]string{
	"c-instr": {
		// callgrind counts in the inclusive cost of the call to _Exit
		// 2 Ir (and 1 I1mr, 1 ILmr) that are in no cost line (the
		// process ends in that call): callgrind_annotate's totals of the
		// functions on the way there exceed the cost lines' sum, which no
		// profile can.
		"./posix/../sysdeps/unix/sysv/linux/_exit.c:_Exit":          "exit",
		"./stdlib/./stdlib/exit.c:exit":                             "exit",
		"./stdlib/./stdlib/exit.c:__run_exit_handlers":              "exit",
		"./csu/../csu/libc-start.c:__libc_start_main@@GLIBC_2.34":   "exit",
		"./csu/../sysdeps/nptl/libc_start_call_main.h:(below main)": "exit",
		"???:(below main)":       "exit",
		"???:0x000000000001ab70": "exit",
	},
	"c-parts": {
		// Calls still running when a part is dumped are written again in
		// the later parts with calls=0; callgrind_annotate, which reads
		// one part, takes their cost as the caller's self cost and not as
		// a call. Their callers' self and their callees' totals differ.
		"/work/main/testdata/callgrind/src/c/prog.c:main":           "calls=0",
		"./csu/../csu/libc-start.c:__libc_start_main@@GLIBC_2.34":   "calls=0",
		"./csu/../sysdeps/nptl/libc_start_call_main.h:(below main)": "calls=0",
		"???:(below main)":       "calls=0",
		"???:0x000000000001ab70": "calls=0",
	},
	"c-threads": {
		// clone is called in the thread that starts another thread and
		// is the root of the new thread's stacks: callgrind_annotate's
		// total is the calls' (36 Ir), ours the cost of the stacks it is on.
		"./misc/../sysdeps/unix/sysv/linux/x86_64/clone.S:clone": "thread",
	},
}

// compare checks the profile of a file against callgrind_annotate's
// outputs: self of every function equal, total equal for every function
// on no call cycle, and at most callgrind_annotate's for the others. It
// returns how many totals were compared for equality and how many were
// on cycles.
func compare(t *testing.T, name string, selfOut, inclOut string) (equal, onCycle int) {
	data := readGz(t, filepath.Join(dir, name+".callgrind.gz"))
	p, err := Parse(bytes.NewReader(data), pbuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	testutil.CheckProfile(t, name, p)
	known := knownNames(p)
	selfA := parseAnnotate(t, selfOut, known)
	inclA := parseAnnotate(t, inclOut, known)
	o := tables(t, p, selfA.events)
	cyc := cyclic(t, data)
	for k, want := range selfA.rows {
		got := o.self[k]
		if got == nil {
			got = make([]int64, len(want))
		}
		if differs[name][k] != "" {
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %s: self %v, callgrind_annotate %v", name, k, got, want)
		}
	}
	for k := range o.self {
		if _, ok := selfA.rows[k]; !ok {
			t.Errorf("%s: %s is in the profile, not in callgrind_annotate's output", name, k)
		}
	}
	for k, want := range inclA.rows {
		got := o.total[k]
		if got == nil {
			got = make([]int64, len(want))
		}
		if cyc[k] {
			onCycle++
			for i := range want {
				if got[i] > want[i] {
					t.Errorf("%s: %s (on a call cycle): total %v, above callgrind_annotate's %v", name, k, got, want)
					break
				}
			}
			continue
		}
		if differs[name][k] != "" {
			continue
		}
		equal++
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %s: total %v, callgrind_annotate --inclusive=yes %v", name, k, got, want)
		}
	}
	return equal, onCycle
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAnnotate holds every real file to the output of callgrind_annotate
// committed beside it (NAME.self.txt, NAME.inclusive.txt).
func TestAnnotate(t *testing.T) {
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			eq, cyc := compare(t, name, readText(t, filepath.Join(dir, name+".self.txt")), readText(t, filepath.Join(dir, name+".inclusive.txt")))
			t.Logf("%s: %d totals equal to callgrind_annotate's, %d functions on call cycles", name, eq, cyc)
			if eq == 0 {
				t.Error("no total compared")
			}
		})
	}
}

// TestAnnotateLive runs callgrind_annotate, when it is installed, on the
// real files and compares as TestAnnotate does.
func TestAnnotateLive(t *testing.T) {
	exe, err := exec.LookPath("callgrind_annotate")
	if err != nil {
		t.Skip("callgrind_annotate is not on PATH (valgrind is not installed): the committed outputs are compared by TestAnnotate")
	}
	tmp := t.TempDir() // callgrind_annotate strips the working directory from file names
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(tmp, name+".callgrind")
			if err := os.WriteFile(path, readGz(t, filepath.Join(dir, name+".callgrind.gz")), 0o644); err != nil {
				t.Fatal(err)
			}
			run := func(args ...string) string {
				cmd := exec.Command(exe, append([]string{"--threshold=100", "--show-percs=no", "--auto=no"}, append(args, path)...)...)
				cmd.Dir = tmp
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%v: %v", cmd.Args, err)
				}
				return string(out)
			}
			compare(t, name, run(), run("--inclusive=yes"))
		})
	}
}
