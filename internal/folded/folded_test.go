package folded

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite golden files")

type row struct {
	self, total       time.Duration
	selfSamp, totSamp int64
}

func parse(t *testing.T, s string) *profile.Profile {
	t.Helper()
	return testutil.ParseString(t, Parse, s)
}

func rows(t *testing.T, p *profile.Profile) (map[string]row, *analysis.Table) {
	t.Helper()
	tab, err := analysis.Functions(p)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.Unique(t, tab.Functions, func(f analysis.Function) (string, row) {
		return f.Name, row{time.Duration(f.Self), time.Duration(f.Total), f.SelfSamples, f.TotalSamples}
	}), tab
}

func checkRows(t *testing.T, got, want map[string]row) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d rows, want %d: %v", len(got), len(want), got)
	}
	for name, w := range want {
		if g := got[name]; g != w {
			t.Errorf("%q: got %+v, want %+v", name, g, w)
		}
	}
}

// Hand-worked: the stacks are main;a;b 3+1, main;a 2, main;c d;b 5 and
// main;a;main 1 (recursion). Self b = 4+5, a = 2, main = 1; total main =
// 4+2+5+1 (once per stack), a = 4+2+1, c d = 5. One sample is 1 ms.
const handInput = "# a comment\n" +
	"main;a;b 3\n" +
	"main;a 2\r\n" +
	"\n" +
	"   \n" +
	"main;c d;b  5\n" +
	"main;a;b\t1\n" +
	"main;a;main 1\n" +
	"main;zero 0\n"

func TestHandWorked(t *testing.T) {
	p := parse(t, handInput)
	got, tab := rows(t, p)
	ms := time.Millisecond
	checkRows(t, got, map[string]row{
		"main": {1 * ms, 12 * ms, 1, 12},
		"a":    {2 * ms, 7 * ms, 2, 7},
		"b":    {9 * ms, 9 * ms, 9, 9},
		"c d":  {0, 5 * ms, 0, 5},
	})
	if time.Duration(tab.Total) != 12*ms || tab.TotalSamples != 12 {
		t.Errorf("total %v (%d samples), want 12ms (12)", tab.Total, tab.TotalSamples)
	}
	if tab.Exact {
		t.Error("folded stacks are samples, not exact")
	}
	if p.Period != 1e6 || p.DurationNanos != 12e6 {
		t.Errorf("period %d duration %d, want 1e6 and 12e6", p.Period, p.DurationNanos)
	}
	w := pbuild.Warnings(p)
	if len(w) != 1 || w[0] != "folded stacks hold sample counts only: each sample taken as 1ms" {
		t.Errorf("warnings %q", w)
	}
	if len(p.Sample) != 4 {
		t.Errorf("%d samples, want 4 (identical stacks merged, zero counts left out)", len(p.Sample))
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"no count", "main;a 1\nmain;b\n", `line 2: "main;b": no count`},
		{"count not a number", "# x\nmain;a x1\n", `line 2: count "x1" is not a non-negative integer`},
		{"negative count", "main;a -3\n", `line 1: count "-3" is not a non-negative integer`},
		{"fractional count", "main;a 1.5\n", `line 1: count "1.5"`},
		{"count too big", "main;a 99999999999999999999\n", `line 1: count "99999999999999999999"`},
		{"no stack", "main 1\n 5\n", `line 2: no stack before the count`},
		{"empty frame", "main;;a 1\n", `line 1: frame 1 is empty`},
		{"empty first frame", ";a 1\n", `line 1: frame 0 is empty`},
		{"trailing separator", "main;a; 1\n", `line 1: frame 2 is empty`},
		{"overflow", "a 9000000000000\nb 9000000000000\n", `line 2: count 9000000000000 makes the total time overflow`},
		{"empty", "", `no stacks`},
		{"only comments", "# nothing\n\n", `no stacks`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.in), pbuild.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLineTooLong(t *testing.T) {
	in := "a 1\n" + strings.Repeat("x", MaxLineBytes) + " 1\n"
	_, err := Parse(strings.NewReader(in), pbuild.Options{})
	if err == nil || !strings.Contains(err.Error(), "line 2: longer than 16777216 bytes") {
		t.Errorf("error %v", err)
	}
}

func write(t *testing.T, p *profile.Profile) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// Write merges identical stacks and sorts; Parse of the output gives the same profile.
func TestRoundTrip(t *testing.T) {
	p := parse(t, handInput)
	out := write(t, p)
	want := "main;a 2\nmain;a;b 4\nmain;a;main 1\nmain;c d;b 5\n"
	if out != want {
		t.Errorf("Write:\n%s\nwant:\n%s", out, want)
	}
	q := parse(t, out)
	g, _ := rows(t, q)
	w, _ := rows(t, p)
	checkRows(t, g, w)
	if again := write(t, q); again != out {
		t.Errorf("second Write differs:\n%s", again)
	}
}

// A pprof profile written as folded keeps its sample counts per function.
func TestWritePprof(t *testing.T) {
	p := testutil.ReadPprof(t, "../../testdata/corpus/pprof/sample.cpu")
	out := write(t, p)
	q := parse(t, out)
	want, wtab := rows(t, p)
	got, gtab := rows(t, q)
	if gtab.TotalSamples != wtab.TotalSamples || wtab.TotalSamples == 0 {
		t.Errorf("total samples %d, want %d", gtab.TotalSamples, wtab.TotalSamples)
	}
	if len(got) != len(want) {
		t.Errorf("%d functions, want %d", len(got), len(want))
	}
	for name, w := range want {
		g := got[name]
		if g.selfSamp != w.selfSamp || g.totSamp != w.totSamp {
			t.Errorf("%s: samples self/total %d/%d, want %d/%d", name, g.selfSamp, g.totSamp, w.selfSamp, w.totSamp)
		}
		// Time is the count at 1 ms a sample.
		if g.self != time.Duration(w.selfSamp)*time.Millisecond {
			t.Errorf("%s: self %v, want %d ms", name, g.self, w.selfSamp)
		}
	}
}

func handProfile() *profile.Profile {
	m := &profile.Mapping{ID: 1, File: "/lib/libc.so.6"}
	mainFn := &profile.Function{ID: 1, Name: "main.main"}
	inl := &profile.Function{ID: 2, Name: "main.inl;ined"}
	work := &profile.Function{ID: 3, Name: "main.work\nx"}
	l1 := &profile.Location{ID: 1, Line: []profile.Line{{Function: mainFn}}}
	l2 := &profile.Location{ID: 2, Line: []profile.Line{{Function: inl}, {Function: work}}}
	l3 := &profile.Location{ID: 3, Mapping: m}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Mapping:    []*profile.Mapping{m},
		Function:   []*profile.Function{mainFn, inl, work},
		Location:   []*profile.Location{l1, l2, l3},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{l2, l1}, Value: []int64{3, 30e6}, Label: map[string][]string{"thread": {"a"}}},
			{Location: []*profile.Location{l2, l1}, Value: []int64{2, 20e6}, Label: map[string][]string{"thread": {"b"}}},
			{Location: []*profile.Location{l3, l1}, Value: []int64{1, 10e6}},
			{Location: []*profile.Location{l1}, Value: []int64{0, 0}},
			{Location: nil, Value: []int64{4, 40e6}},
		},
	}
}

// Inlined lines are frames; labels merge; names lose ';' and line breaks are escaped;
// a location without function is named by its binary; zero counts and empty
// stacks are left out.
func TestWriteGolden(t *testing.T) {
	out := write(t, handProfile())
	path := filepath.Join("../../testdata/folded", "hand.golden.folded")
	if *update {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("Write:\n%s\nwant (%s; -update to rewrite):\n%s", out, path, want)
	}
	if !strings.Contains(out, "main.main;main.work\\nx;main.inl:ined 5\n") {
		t.Errorf("unexpected output:\n%s", out)
	}
}

// Without a count value, the time is written in 1 ms samples, rounded.
func TestWriteWithoutCounts(t *testing.T) {
	p := handProfile()
	p.SampleType = p.SampleType[1:]
	for _, s := range p.Sample {
		s.Value = s.Value[1:]
	}
	p.Sample[0].Value[0] = 30_400_000 // 30.4 ms → 30
	p.Sample[1].Value[0] = 19_600_000 // 19.6 ms → 20
	out := write(t, p)
	if !strings.Contains(out, "main.main;main.work\\nx;main.inl:ined 50\n") || !strings.Contains(out, "main.main;[libc.so.6] 10\n") {
		t.Errorf("Write:\n%s", out)
	}
}

func TestWriteNotTime(t *testing.T) {
	p := handProfile()
	p.SampleType[1] = &profile.ValueType{Type: "alloc_space", Unit: "bytes"}
	if err := Write(&bytes.Buffer{}, p); err == nil || !strings.Contains(err.Error(), "not a time") {
		t.Errorf("error %v", err)
	}
}

// hostileNames are function names the folded format cannot hold as they
// are, with the frame Write makes of each (in a non-root position).
var hostileNames = []struct{ name, frame string }{
	{"semi;colon", "semi:colon"},
	{"line\nbreak", `line\nbreak`},
	{"carriage\rreturn", `carriage\rreturn`},
	{"nul\x00byte", `nul\x00byte`},
	{"bad\xffutf8\xc3", `bad\xffutf8\xc3`},
	{"tab\tbed", `tab\tbed`},
	{"escape\x1b[2Jclear", `escape\x1b[2Jclear`},
	{"del\x7f", `del\x7f`},
	{"c1\u0085next", `c1\u0085next`},
	{"para\u2029sep", `para\u2029sep`},
	{"bidi\u202eevil", `bidi\u202eevil`},
	{"trailing number 12", "trailing number 12"},
	{"trailing space  ", `trailing space\x20\x20`},
	{"   ", `\x20\x20\x20`},
	{"#hash", "#hash"}, // a comment only at the start of a line
	{"ünïcödé ok", "ünïcödé ok"},
}

// Write escapes what the format cannot hold, so that Parse reads back its
// output, names as written (a root '#' escaped, a comment otherwise), with
// every sample, and writing that again gives the same bytes.
func TestWriteHostileNames(t *testing.T) {
	var fns []*profile.Function
	var locs []*profile.Location
	for i, h := range hostileNames {
		fns = append(fns, &profile.Function{ID: uint64(i + 1), Name: h.name})
		locs = append(locs, &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fns[i]}}})
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Function:   fns,
		Location:   locs,
	}
	want := map[string]int64{} // frame -> self samples
	for i := range hostileNames {
		// Each name as the leaf under every other as the root, and alone.
		for j := range hostileNames {
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{locs[i], locs[j]}, Value: []int64{1, 1e6}})
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{locs[i]}, Value: []int64{1, 1e6}})
		want[hostileNames[i].frame] += int64(len(hostileNames))
		if alone := hostileNames[i].frame; alone == "#hash" {
			want[`\x23hash`]++ // a root
		} else {
			want[alone]++
		}
	}
	out := write(t, p)
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		for _, c := range line {
			if c < 0x20 || c == 0x7f || c >= 0x80 && c < 0xa0 || c == 0x2028 || c == 0x2029 || c == 0x202e || c == utf8.RuneError {
				t.Errorf("output line %q holds %U", line, c)
			}
		}
		if strings.HasPrefix(line, "#") {
			t.Errorf("output line %q starts a comment", line)
		}
	}
	q := parse(t, out)
	got, tab := rows(t, q)
	if tab.TotalSamples != int64(len(p.Sample)) {
		t.Errorf("read back %d samples, want %d", tab.TotalSamples, len(p.Sample))
	}
	roots := map[string]bool{}
	for _, s := range q.Sample {
		roots[s.Location[len(s.Location)-1].Line[0].Function.Name] = true
	}
	if !roots[`\x23hash`] || roots["#hash"] {
		t.Errorf("root '#hash' not escaped as \\x23hash: roots %v", roots)
	}
	for frame, n := range want {
		if got[frame].selfSamp != n {
			t.Errorf("%q: %d self samples read back, want %d", frame, got[frame].selfSamp, n)
		}
	}
	if again := write(t, q); again != out {
		t.Errorf("writing what was read back differs:\n%s\nfirst:\n%s", again, out)
	}
	for _, h := range hostileNames {
		if f := Frame(h.frame, false); f != h.frame {
			t.Errorf("Frame(%q) = %q: not stable", h.frame, f)
		}
	}
}
