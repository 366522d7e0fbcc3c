package gate

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/loaders"
)

// Issue 32's short report, on the shape of a real record: 31 benchmarks of
// one package at the default 5 runs a side (BurntSushi/toml v1.6.0's
// Decode, Encode, Example, Escapes and Key), of which the 15 that decode
// (Decode/*, Example/decode) call a lexer function made 35% slower. Run to
// run noise is pseudo-random with a fixed seed. A real record of that
// change (lexer.next checksumming each token's first two bytes) flagged
// lexer.next alone in those 15, +20% to +70%, in 43 lines.
//
// The report must stay short whatever the module's size: at most 80 lines
// and 3 a flagged benchmark, its verdict in its first 5 lines and its last
// (the Markdown's in its title), agreeing with the exit code, with no
// "± ∞" (benchstat's interval of fewer than 6 runs) in the default
// outputs nor in --full's tables.

const (
	short32Lines   = 80 // the short report's bound, plus
	short32PerFlag = 3  // these a flagged benchmark
)

// record32Benchmarks are the names of toml's 31 benchmarks, and whether
// each calls the slowed function.
func record32Benchmarks() (names []string, slowed map[string]bool) {
	slowed = map[string]bool{}
	for _, g := range []string{"array", "bool", "comment", "datetime", "float", "inline-table", "integer", "key", "spec-1.0.0", "spec-1.1.0", "string", "table", "top"} {
		names = append(names, "BenchmarkDecode/"+g, "BenchmarkEncode/"+g)
		slowed["BenchmarkDecode/"+g] = true
	}
	names = append(names, "BenchmarkDecode/large-doc", "BenchmarkExample/decode", "BenchmarkExample/encode", "BenchmarkEscapes", "BenchmarkKey")
	slowed["BenchmarkDecode/large-doc"] = true
	slowed["BenchmarkExample/decode"] = true
	return names, slowed
}

// record32Fixture judges the benchmarks as record does: each benchmark's
// profiles on their own (shares, the module gated), benchmark results of
// 5 runs a side, exact allocations. slow is the slowdown of
// example.com/toml.(*lexer).next where it is called (0: an A/A run); gc
// that of the runtime's runtime.scanobject in the Encode benchmarks,
// outside the gate.
func record32Fixture(t *testing.T, slow, gc float64) ([]*diff.Report, *bench.Report, []*diff.AllocReport) {
	t.Helper()
	const pkg = "example.com/toml"
	names, slowed := record32Benchmarks()
	rng := rand.New(rand.NewPCG(32, 1))
	noise := func() float64 { return 1 + 0.04*rng.NormFloat64() }
	prof := func(text string) *profile.Profile {
		p, err := loaders.Read(strings.NewReader(text), loaders.WithFormat(loaders.FormatFolded))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A run's folded stacks: the module's functions and the runtime's,
	// lexer.next among them when the benchmark decodes.
	run := func(decodes bool, nextScale, gcScale float64) string {
		var b strings.Builder
		fns := []struct {
			stack string
			n     float64
		}{
			{"main;" + pkg + ".(*parser).topLevel", 900},
			{"main;" + pkg + ".(*parser).value", 700},
			{"main;" + pkg + ".(*encoder).eElement", 800},
			{"main;" + pkg + ".Key.String", 300},
			{"main;runtime.mallocgc", 1200},
			{"main;runtime.memmove", 400},
			{"main;runtime.chanrecv", 500},
			{"main;runtime.lock2", 250},
			{"main;aeshashbody", 200},
			{"main;runtime.gcDrain;runtime.scanobject", 600 * gcScale},
		}
		for _, f := range fns {
			fmt.Fprintf(&b, "%s %d\n", f.stack, int(f.n*noise()))
		}
		if decodes {
			fmt.Fprintf(&b, "main;%s.(*lexer).nextItem;%s.(*lexer).next %d\n", pkg, pkg, int(900*nextScale*noise()))
			fmt.Fprintf(&b, "main;%s.(*lexer).nextItem;%s.lexTop %d\n", pkg, pkg, int(500*noise()))
		}
		return b.String()
	}
	var pairs []diff.Pair
	var baseOut, headOut strings.Builder
	for _, out := range []*strings.Builder{&baseOut, &headOut} {
		fmt.Fprintf(out, "goos: linux\ngoarch: amd64\npkg: %s\ncpu: test\n", pkg)
	}
	for _, name := range names {
		pr := diff.Pair{Name: pkg + " " + name}
		dec := slowed[name]
		scale := 1.0
		if dec {
			scale += slow
		}
		gcScale := 1.0
		if strings.HasPrefix(name, "BenchmarkEncode/") {
			gcScale += gc
		}
		for range 5 {
			pr.Base = append(pr.Base, prof(run(dec, 1, 1)))
			pr.Head = append(pr.Head, prof(run(dec, scale, gcScale)))
		}
		pairs = append(pairs, pr)
		for range 5 {
			ns := 10000.0 * float64(1+len(name)%7)
			headNs := ns
			if dec {
				headNs *= 1 + slow*0.12 // next is about 12% of a decode
			}
			fmt.Fprintf(&baseOut, "%s-2 \t 1000\t %.1f ns/op\t 4096 B/op\t 50 allocs/op\n", name, ns*noise())
			fmt.Fprintf(&headOut, "%s-2 \t 1000\t %.1f ns/op\t 4096 B/op\t 50 allocs/op\n", name, headNs*noise())
		}
	}
	funcs, err := diff.CompareEach(pairs, diff.WithGate(ModulePattern([]string{pkg})))
	if err != nil {
		t.Fatal(err)
	}
	benches, err := bench.Compare(strings.NewReader(baseOut.String()), strings.NewReader(headOut.String()))
	if err != nil {
		t.Fatal(err)
	}
	var ar []allocResult
	for _, name := range names {
		table := &diff.AllocTable{Work: 1000, Funcs: map[string]*diff.AllocFunc{
			pkg + ".(*parser).value": {Self: diff.AllocCount{Objects: 50000, Bytes: 4096000}, Total: diff.AllocCount{Objects: 50000, Bytes: 4096000},
				Lines: map[string]diff.AllocCount{"parse.go:12": {Objects: 50000, Bytes: 4096000}}},
		}, Judged: diff.AllocCount{Objects: 50000, Bytes: 4096000}}
		ar = append(ar, allocResult{name: pkg + " " + name, base: table, head: table})
	}
	return funcs, benches, compareAllocs(ar)
}

// flagged counts the benchmarks with a function regressed or a near miss
// of the gate.
func flagged(funcs []*diff.Report) int {
	n := 0
	for _, r := range funcs {
		if flaggedBench(r) {
			n++
		}
	}
	return n
}

func TestRecord32ShortReport(t *testing.T) {
	for _, c := range []struct {
		name     string
		slow, gc float64
		exit     int
	}{
		{"A/B", 0.35, 0, exitFail},
		{"A/A", 0, 0, exitOK},
		// The runtime's scanobject 40% slower in 13 benchmarks: shown,
		// never failing, never leading a summary.
		{"A/A, the runtime slower", 0, 0.4, exitOK},
		{"A/B, the runtime slower", 0.35, 0.4, exitFail},
	} {
		funcs, benches, allocs := record32Fixture(t, c.slow, c.gc)
		n := flagged(funcs)
		if c.exit == exitFail && n < 10 {
			t.Fatalf("%s: %d benchmarks flagged; the fixture means 15 to fail", c.name, n)
		}
		limit := short32Lines + short32PerFlag*n
		res := &Measurement{baseRev: revision{Name: "HEAD~1", Commit: "8f3bd3912345678"}, headRev: revision{Name: "HEAD", Commit: "6245bc012345678"}, out: "/tmp/hotbudget-record-1234",
			why: "timing: chosen by --instrument time"}
		for _, format := range []string{"text", "markdown", "full"} {
			f, full := format, false
			if format == "full" {
				f, full = "text", true
			}
			out, code := reportOf(t, res, funcs, benches, allocs, f, full)
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			if os.Getenv("HOTBUDGET_SHOW32") == c.name+" "+format {
				t.Logf("%s %s (exit %d, %d lines):\n%s", c.name, format, code, len(lines), out)
			}
			if code != c.exit {
				t.Errorf("%s %s: exit %d, want %d", c.name, format, code, c.exit)
			}
			if strings.Contains(out, "∞") {
				t.Errorf("%s %s: ∞ in the report (5 runs a side: print their range, or nothing):\n%s", c.name, format, out)
			}
			want := map[int]string{exitOK: "hotbudget record: pass (exit 0)", exitFail: "hotbudget record: regressed (exit 1)"}[c.exit]
			switch format {
			case "text":
				if len(lines) > limit {
					t.Errorf("%s text: %d lines, want at most %d (%d + %d for each of %d flagged benchmarks):\n%s", c.name, len(lines), limit, short32Lines, short32PerFlag, n, out)
				}
				at := -1
				for i, l := range lines[:min(5, len(lines))] {
					if strings.HasPrefix(l, want) {
						at = i
					}
				}
				if at < 0 || lines[len(lines)-1] != lines[at] {
					t.Errorf("%s text: the verdict %q is not in the first 5 lines and the last:\n%s", c.name, want, out)
				}
				// A summary (the verdict, a benchmark's line, the
				// line over all) names no function outside the gate.
				for _, l := range lines {
					if (strings.HasPrefix(l, "hotbudget record: ") || strings.HasPrefix(l, "  example.com/toml Benchmark") || strings.HasPrefix(l, "31 benchmarks")) && strings.Contains(l, "runtime.") {
						t.Errorf("%s text: a summary line names the runtime, outside the gate: %q", c.name, l)
					}
				}
				if c.gc > 0 && !strings.Contains(out, "outside the gate, changed significantly (shown, never failing): runtime.scanobject +") {
					t.Errorf("%s text: runtime.scanobject's significant change outside the gate is not shown:\n%s", c.name, out)
				}
			case "markdown":
				if len(lines) > limit {
					t.Errorf("%s markdown: %d lines, want at most %d (%d + %d for each of %d flagged benchmarks):\n%s", c.name, len(lines), limit, short32Lines, short32PerFlag, n, out)
				}
				icon := map[int]string{exitOK: "## ✅ ", exitFail: "## ❌ "}[c.exit]
				if !strings.HasPrefix(lines[0], icon+strings.TrimPrefix(want, "hotbudget record: ")[:4]) && !strings.HasPrefix(lines[0], icon+"hotbudget record: "+strings.TrimPrefix(want, "hotbudget record: ")[:4]) {
					t.Errorf("%s markdown: title %q, want the verdict %q", c.name, lines[0], want)
				}
			case "full":
				if lines[0] != res.why || !strings.HasPrefix(lines[1], want) || lines[len(lines)-1] != lines[1] {
					t.Errorf("%s --full: the instrument is not first, or the verdict %q second and last", c.name, want)
				}
				// 5 runs: the benchmark table gives their range, and
				// its advice is record's.
				if !strings.Contains(out, " to ") || strings.Contains(out, "go test -count") || !strings.Contains(out, "record --runs 6 or more") {
					t.Errorf("%s --full: want the runs' range and record's advice (--runs):\n%s", c.name, out)
				}
			}
		}
	}
}

// TestRecord32BenchRange: the benchmark table of 5 runs a side (record's
// --full, hotbudget bench) gives each median with its runs' range, never
// benchstat's "± ∞", and the median alone where the runs agree to the
// digits shown (toml's B/op: 46.27Ki to 46.28Ki read "46.28Ki B/op
// (46.28Ki to 46.28Ki)" before).
func TestRecord32BenchRange(t *testing.T) {
	out := func(ns []float64, bytes []int) string {
		var b strings.Builder
		b.WriteString("pkg: example.com/m\n")
		for i := range ns {
			fmt.Fprintf(&b, "BenchmarkDecode-2 \t 1000\t %.0f ns/op\t %d B/op\t 617 allocs/op\n", ns[i], bytes[i])
		}
		return b.String()
	}
	rep, err := bench.Compare(strings.NewReader(out([]float64{282400, 241600, 300600, 290000, 285000}, []int{47386, 47387, 47386, 47386, 47387})),
		strings.NewReader(out([]float64{220600, 148100, 365100, 230000, 210000}, []int{47386, 47386, 47387, 47386, 47386})))
	if err != nil {
		t.Fatal(err)
	}
	var text, md bytes.Buffer
	if err := rep.Write(&text, "text"); err != nil {
		t.Fatal(err)
	}
	if err := rep.Write(&md, "markdown"); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"text": text.String(), "markdown": md.String()} {
		if strings.Contains(s, "∞") {
			t.Errorf("%s: ∞ at 5 runs:\n%s", name, s)
		}
		for _, want := range []string{"285.0µ sec/op (241.6µ to 300.6µ)", "220.6µ sec/op (148.1µ to 365.1µ)", "46.28Ki B/op |", "617.0 allocs/op"} {
			if name == "text" {
				want = strings.TrimSuffix(want, " |")
			}
			if !strings.Contains(s, want) {
				t.Errorf("%s: no %q:\n%s", name, want, s)
			}
		}
		if strings.Contains(s, "46.28Ki to") || strings.Contains(s, "617.0 to") {
			t.Errorf("%s: a range of runs that agree to the digits shown:\n%s", name, s)
		}
	}
}
