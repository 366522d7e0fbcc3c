package speedscope

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

const corpus = "../../testdata/corpus/speedscope"

type row struct {
	self, total       time.Duration
	selfSamp, totSamp int64
}

func parseFile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	return testutil.ParseFile(t, Parse, path)
}

func parseString(t *testing.T, s string) *profile.Profile {
	t.Helper()
	return testutil.ParseString(t, Parse, s)
}

func rows(t *testing.T, p *profile.Profile, opts ...analysis.Option) (map[string]row, *analysis.Table) {
	t.Helper()
	tab, err := analysis.Functions(p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.Unique(t, tab.Functions, func(f analysis.Function) (string, row) {
		return f.Name, row{time.Duration(f.Self), time.Duration(f.Total), f.SelfSamples, f.TotalSamples}
	}), tab
}

func checkRows(t *testing.T, got, want map[string]row) {
	t.Helper()
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("no row for %s", name)
			continue
		}
		if g != w {
			t.Errorf("%s: got self %v total %v samples %d/%d, want self %v total %v samples %d/%d",
				name, g.self, g.total, g.selfSamp, g.totSamp, w.self, w.total, w.selfSamp, w.totSamp)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected row %s: %+v", name, got[name])
		}
	}
}

// The hand-worked numbers for the corpus. simple.speedscope.json (evented,
// unit none = 1 ms) opens a,b,c at 0; c closes at 2; d runs 2..6; c runs
// 6..9; b and a close at 14. So the stacks are a;b;c 2, a;b;d 4, a;b;c 3 and
// a;b 5: self c=5 d=4 b=5 a=0, total a=b=14. Counts are closed frames.
// simple-sampled.speedscope.json has the same shape as samples (seconds):
// a;b;c 1+1+3, a;b;d 4, a;b 5.
func TestCorpus(t *testing.T) {
	ms := time.Millisecond
	evented := map[string]row{
		"a": {0, 14 * ms, 1, 5},
		"b": {5 * ms, 14 * ms, 1, 4},
		"c": {5 * ms, 5 * ms, 2, 2},
		"d": {4 * ms, 4 * ms, 1, 1},
	}
	s := time.Second
	sampled := map[string]row{
		"a": {0, 14 * s, 0, 5},
		"b": {5 * s, 14 * s, 1, 5},
		"c": {5 * s, 5 * s, 3, 3},
		"d": {4 * s, 4 * s, 1, 1},
	}
	two := map[string]row{
		"a": {0, 28 * s, 0, 10},
		"b": {10 * s, 28 * s, 2, 10},
		"c": {10 * s, 10 * s, 6, 6},
		"d": {8 * s, 8 * s, 2, 2},
	}
	for _, tc := range []struct {
		file     string
		want     map[string]row
		exact    bool
		total    time.Duration
		duration time.Duration
		period   time.Duration
		warnings []string
	}{
		{"simple.speedscope.json", evented, true, 14 * ms, 14 * ms, 0, []string{`unit "none": each unit taken as 1ms`}},
		{"simple-no-pretty-print.speedscope.json", evented, true, 14 * ms, 14 * ms, 0, []string{`unit "none": each unit taken as 1ms`}},
		// Weights 1,1,4,3,5 s: the median is 3 s.
		{"simple-sampled.speedscope.json", sampled, false, 14 * s, 14 * s, 3 * s, nil},
		{"two-sampled.speedscope.json", two, false, 28 * s, 14 * s, 3 * s, nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p := parseFile(t, filepath.Join(corpus, tc.file))
			got, tab := rows(t, p)
			checkRows(t, got, tc.want)
			if tab.Exact != tc.exact {
				t.Errorf("exact = %v, want %v", tab.Exact, tc.exact)
			}
			if time.Duration(tab.Total) != tc.total {
				t.Errorf("total = %v, want %v", tab.Total, tc.total)
			}
			if d := time.Duration(p.DurationNanos); d != tc.duration {
				t.Errorf("duration = %v, want %v", d, tc.duration)
			}
			if d := time.Duration(p.Period); d != tc.period {
				t.Errorf("period = %v, want %v", d, tc.period)
			}
			if w := pbuild.Warnings(p); strings.Join(w, "|") != strings.Join(tc.warnings, "|") {
				t.Errorf("warnings = %q, want %q", w, tc.warnings)
			}
			if meta.Format(p.Comments) != "speedscope" {
				t.Errorf("no format comment in %q", p.Comments)
			}
		})
	}
}

func hasComment(p *profile.Profile, c string) bool {
	for _, x := range p.Comments {
		if x == c {
			return true
		}
	}
	return false
}

// Each profile's name is the "profile" and "thread" label, so a thread
// selection picks one profile; by default all are merged (TestCorpus).
func TestProfilesAreThreads(t *testing.T) {
	p := parseFile(t, filepath.Join(corpus, "two-sampled.speedscope.json"))
	s := time.Second
	for _, name := range []string{"one", "two"} {
		got, _ := rows(t, p, analysis.Selection{Threads: []string{name}})
		checkRows(t, got, map[string]row{
			"a": {0, 14 * s, 0, 5},
			"b": {5 * s, 14 * s, 1, 5},
			"c": {5 * s, 5 * s, 3, 3},
			"d": {4 * s, 4 * s, 1, 1},
		})
	}
	for _, smp := range p.Sample {
		prof, thr := smp.Label[pbuild.LabelProfile], smp.Label[pbuild.LabelThread]
		if len(prof) != 1 || len(thr) != 1 || prof[0] != thr[0] {
			t.Errorf("sample labels %v: want one profile label equal to the thread label", smp.Label)
		}
	}
	if !hasComment(p, "speedscope activeProfileIndex: 1 (two)") {
		t.Errorf("activeProfileIndex not noted: %q", p.Comments)
	}
}

const head = `{"$schema":"https://www.speedscope.app/file-format-schema.json",`

func sampledFile(unit string, weights string) string {
	return head + `"shared":{"frames":[{"name":"main","file":"m.go","line":3,"col":7},{"name":"f"}]},
"profiles":[{"type":"sampled","name":"p","unit":"` + unit + `","startValue":0,"endValue":0,
"samples":[[0,1],[0]],"weights":` + weights + `}]}`
}

// Each unit is converted to nanoseconds; "none" is 1 ms. The weights are
// 1.5 (stack main;f) and 2.5 (stack main); fractional nanoseconds round half
// away from zero.
func TestUnits(t *testing.T) {
	for _, tc := range []struct {
		unit         string
		total, selfF time.Duration
	}{
		{"nanoseconds", 2 + 3, 2},
		{"microseconds", 4 * time.Microsecond, 1500},
		{"milliseconds", 4 * time.Millisecond, 1500 * time.Microsecond},
		{"seconds", 4 * time.Second, 1500 * time.Millisecond},
		{"none", 4 * time.Millisecond, 1500 * time.Microsecond},
	} {
		t.Run(tc.unit, func(t *testing.T) {
			p := parseString(t, sampledFile(tc.unit, "[1.5,2.5]"))
			got, tab := rows(t, p)
			if time.Duration(tab.Total) != tc.total {
				t.Errorf("total = %v, want %v", tab.Total, tc.total)
			}
			if got["f"].self != tc.selfF {
				t.Errorf("self f = %v, want %v", got["f"].self, tc.selfF)
			}
			// endValue 0 = startValue: the span is the sum of the weights.
			if time.Duration(p.DurationNanos) != tc.total {
				t.Errorf("duration = %v, want %v", time.Duration(p.DurationNanos), tc.total)
			}
		})
	}
}

// Frames keep file, line and column (already 1-based).
func TestFrameFields(t *testing.T) {
	p := parseString(t, sampledFile("milliseconds", "[1,1]"))
	var found bool
	for _, l := range p.Location {
		ln := l.Line[0]
		if ln.Function.Name == "main" {
			found = true
			if ln.Function.Filename != "m.go" || ln.Line != 3 || ln.Column != 7 {
				t.Errorf("main: file %q line %d col %d, want m.go 3 7", ln.Function.Filename, ln.Line, ln.Column)
			}
		}
	}
	if !found {
		t.Error("no location for main")
	}
}

// "profiles" before "shared", keys in any order, unknown keys skipped.
func TestOrderIndependent(t *testing.T) {
	in := `{"profiles":[{"weights":[2],"samples":[[1,0]],"extra":{"x":[1,{"y":2}]},"unit":"milliseconds","name":"n","type":"sampled"}],
"other":[[[]]],"shared":{"more":1,"frames":[{"name":"leaf"},{"name":"root","extra":null}]},"$schema":"https://www.speedscope.app/file-format-schema.json"}`
	got, _ := rows(t, parseString(t, in))
	checkRows(t, got, map[string]row{
		"root": {0, 2 * time.Millisecond, 0, 1},
		"leaf": {2 * time.Millisecond, 2 * time.Millisecond, 1, 1},
	})
}

// A sample with an empty stack adds to the total but to no function, as in speedscope.
func TestEmptyStack(t *testing.T) {
	in := head + `"shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","name":"p","unit":"milliseconds","startValue":0,"endValue":10,"samples":[[],[0]],"weights":[3,7]}]}`
	got, tab := rows(t, parseString(t, in))
	if time.Duration(tab.Total) != 10*time.Millisecond {
		t.Errorf("total = %v, want 10ms", tab.Total)
	}
	checkRows(t, got, map[string]row{"a": {7 * time.Millisecond, 7 * time.Millisecond, 1, 1}})
}

// A recursive frame counts once in total per stack.
func TestRecursion(t *testing.T) {
	in := head + `"shared":{"frames":[{"name":"a"},{"name":"b"}]},"profiles":[{"type":"evented","name":"p","unit":"microseconds","startValue":0,"endValue":10,"events":[
{"type":"O","frame":0,"at":0},{"type":"O","frame":1,"at":1},{"type":"O","frame":0,"at":2},{"type":"C","frame":0,"at":5},{"type":"C","frame":1,"at":6},{"type":"C","frame":0,"at":10}]}]}`
	us := time.Microsecond
	got, _ := rows(t, parseString(t, in))
	// a: 0..1 self, a;b: 1..2, a;b;a: 2..5, a;b: 5..6, a: 6..10.
	checkRows(t, got, map[string]row{
		"a": {1*us + 3*us + 4*us, 10 * us, 2, 3},
		"b": {2 * us, 5 * us, 1, 2},
	})
}

// A file mixing evented and sampled profiles keeps the kind of the active profile.
func TestMixedKinds(t *testing.T) {
	ev := `{"type":"evented","name":"ev","unit":"milliseconds","startValue":0,"endValue":4,"events":[{"type":"O","frame":0,"at":0},{"type":"C","frame":0,"at":4}]}`
	sa := `{"type":"sampled","name":"sa","unit":"milliseconds","startValue":0,"endValue":9,"samples":[[0]],"weights":[9]}`
	for _, tc := range []struct {
		name   string
		active string
		exact  bool
		total  time.Duration
	}{
		{"first is evented", ``, true, 4 * time.Millisecond},
		{"active is sampled", `"activeProfileIndex":1,`, false, 9 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := parseString(t, head+tc.active+`"shared":{"frames":[{"name":"a"}]},"profiles":[`+ev+`,`+sa+`]}`)
			_, tab := rows(t, p)
			if tab.Exact != tc.exact || time.Duration(tab.Total) != tc.total {
				t.Errorf("exact %v total %v, want %v %v", tab.Exact, tab.Total, tc.exact, tc.total)
			}
			w := strings.Join(pbuild.Warnings(p), "|")
			if !strings.Contains(w, "skipped, exact and sampled data are not mixed") {
				t.Errorf("warnings %q do not say a profile was skipped", w)
			}
		})
	}
}

func TestNoSchemaWarns(t *testing.T) {
	p := parseString(t, `{"shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","name":"p","unit":"seconds","samples":[[0]],"weights":[1]}]}`)
	if w := pbuild.Warnings(p); len(w) != 1 || !strings.Contains(w[0], `no "$schema"`) {
		t.Errorf("warnings = %q", w)
	}
}

func TestBadActiveIndexWarns(t *testing.T) {
	p := parseString(t, head+`"activeProfileIndex":5,"shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","name":"p","unit":"seconds","samples":[[0]],"weights":[1]}]}`)
	if w := pbuild.Warnings(p); len(w) != 1 || !strings.Contains(w[0], "activeProfileIndex 5") {
		t.Errorf("warnings = %q", w)
	}
}

func TestErrors(t *testing.T) {
	frames := `"shared":{"frames":[{"name":"A"},{"name":"B"}]},`
	evented := func(events string) string {
		return head + frames + `"profiles":[{"type":"evented","name":"p1","unit":"milliseconds","startValue":0,"endValue":9,"events":[` + events + `]}]}`
	}
	sampled := func(samples, weights string) string {
		return head + frames + `"profiles":[{"type":"sampled","name":"s","unit":"milliseconds","samples":` + samples + `,"weights":` + weights + `}]}`
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(corpus, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"corpus: O without C", read("incomplete-trace.json"), `profile 0 ("p1"): frame 0 ("A") opened at event 0 is never closed`},
		{"corpus: C not nested", read("out-of-order-events.json"), `profile 0 ("p1"): event 6: closes frame 1 ("B") but the innermost open frame is 0 ("A"), opened at event 3`},
		{"at decreases", evented(`{"type":"O","frame":0,"at":5},{"type":"C","frame":0,"at":4}`), `profile 0 ("p1"): event 1: at 4 is before the previous event's at 5`},
		{"C with nothing open", evented(`{"type":"C","frame":0,"at":5}`), `event 0: closes frame 0 ("A") but no frame is open`},
		{"event frame out of range", evented(`{"type":"O","frame":2,"at":5}`), `event 0: frame index 2 out of range (2 frames)`},
		{"event frame not an integer", evented(`{"type":"O","frame":0.5,"at":5}`), `profile 0: offset`},
		{"event type", evented(`{"type":"X","frame":0,"at":5}`), `event 0: type "X", want "O" or "C"`},
		{"event without at", evented(`{"type":"O","frame":0}`), `event 0: no "at"`},
		{"event without frame", evented(`{"type":"O","at":0}`), `event 0: no "frame"`},
		{"event at is a string", evented(`{"type":"O","frame":0,"at":"1"}`), `event 0 "at": got a string, want a number`},
		{"event type is a number", evented(`{"type":1,"frame":0,"at":1}`), `event 0 "type": got a number, want a string`},
		{"sample holds a string", sampled(`[[0,"x"]]`, `[1]`), `sample 0: got a string, want a number`},
		{"weight is a string", sampled(`[[0]]`, `["1"]`), `"weights": got a string, want a number`},
		{"sample frame out of range", sampled(`[[0],[0,7]]`, `[1,1]`), `profile 0 ("s"): sample 1: frame index 7 out of range (2 frames)`},
		{"sample holds null", sampled(`[[0,null]]`, `[1]`), `sample 0: got null, want a number`},
		{"sample holds an array", sampled(`[[0,[1]]]`, `[1]`), `sample 0: got an array, want a number`},
		{"sample is an object", sampled(`[{"a":1}]`, `[1]`), `sample 0: got an object, want an array`},
		{"weights is a number", sampled(`[[0]]`, `7`), `"weights": got a number, want an array`},
		{"sample frame fractional", sampled(`[[0.5]]`, `[1]`), `sample 0: frame index 0.5 is not a valid index`},
		{"sample frame negative", sampled(`[[-1]]`, `[1]`), `sample 0: frame index -1 is not a valid index`},
		{"negative weight", sampled(`[[0],[1]]`, `[1,-2]`), `profile 0 ("s"): sample 1: negative weight -2`},
		{"fewer weights", sampled(`[[0],[1]]`, `[1]`), `profile 0 ("s"): 2 samples but 1 weights`},
		{"no weights", sampled(`[[0]]`, `null`), `1 samples but 0 weights`},
		{"huge weight", sampled(`[[0]]`, `[1e300]`), `sample 0: weight 1e+300 is out of range`},
		{"weights overflow", sampled(`[[0],[0],[0]]`, `[4e12,4e12,4e12]`), `total time overflows`},
		{"unit bytes", strings.Replace(sampled(`[[0]]`, `[1]`), "milliseconds", "bytes", 1), `unit "bytes" is a memory profile`},
		{"unknown unit", strings.Replace(sampled(`[[0]]`, `[1]`), "milliseconds", "hours", 1), `unknown unit "hours"`},
		{"no unit", strings.Replace(sampled(`[[0]]`, `[1]`), `"unit":"milliseconds",`, "", 1), `profile 0 ("s"): no "unit"`},
		{"bad type", strings.Replace(sampled(`[[0]]`, `[1]`), `"sampled"`, `"flat"`, 1), `type "flat", want "evented" or "sampled"`},
		{"sampled with events", strings.Replace(sampled(`[[0]]`, `[1]`), `"samples"`, `"events":[{"type":"O","frame":0,"at":1}],"samples"`, 1), `a sampled profile has "events"`},
		{"wrong schema", `{"$schema":"https://example.com/x.json","profiles":[]}`, `"$schema" is "https://example.com/x.json"`},
		{"no profiles", head + frames[:len(frames)-1] + `}`, `no "profiles"`},
		{"empty profiles", head + `"profiles":[]}`, `"profiles" is empty`},
		{"profiles twice", head + `"profiles":[],"profiles":[]}`, `"profiles" appears twice`},
		{"not an object", `[1,2]`, `top level: got "[", want "{"`},
		{"truncated", head + frames + `"profiles":[{"type":"sampled","samples":[[0],`, `unexpected end of input`},
		{"syntax error", head + `"shared":{"frames":[{"name":"a",}]}}`, `invalid character`},
		{"empty input", ``, `unexpected end of input`},
		{"frame not an object", head + `"shared":{"frames":[1]},"profiles":[]}`, `frame 0: got number 1, want "{"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(strings.NewReader(tc.in), pbuild.Options{})
			if err == nil {
				t.Fatalf("Parse succeeded with %d samples, want error containing %q", len(p.Sample), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestTruncatedIsUnexpectedEOF(t *testing.T) {
	_, err := Parse(strings.NewReader(head+`"profiles":[`), pbuild.Options{})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("error %v does not wrap io.ErrUnexpectedEOF", err)
	}
}

// Bad line or col values are dropped with a warning, not fatal.
func TestBadLineWarns(t *testing.T) {
	p := parseString(t, head+`"shared":{"frames":[{"name":"a","line":-3,"col":1.5}]},"profiles":[{"type":"sampled","name":"p","unit":"seconds","samples":[[0]],"weights":[1]}]}`)
	w := strings.Join(pbuild.Warnings(p), "|")
	if !strings.Contains(w, "frame 0: line -3 is not a non-negative integer") || !strings.Contains(w, "frame 0: col 1.5") {
		t.Errorf("warnings = %q", w)
	}
	if l := p.Location[0].Line[0]; l.Line != 0 || l.Column != 0 {
		t.Errorf("line %d col %d, want 0 0", l.Line, l.Column)
	}
}

// Frames that differ only in line or column are different functions (the
// many anonymous functions of one JavaScript file); identical frames at two
// indexes are one.
func TestFrameIdentity(t *testing.T) {
	in := head + `"shared":{"frames":[{"name":"","file":"a.js","line":1,"col":5},{"name":"(anonymous)","file":"a.js","line":1,"col":9},
{"name":"(anonymous)","file":"a.js","line":2},{"name":"(anonymous)","file":"a.js","line":2}]},
"profiles":[{"type":"sampled","name":"p","unit":"milliseconds","samples":[[0],[1],[2],[3],[0,1]],"weights":[1,2,4,8,16]}]}`
	tab, err := analysis.Functions(parseString(t, in))
	if err != nil {
		t.Fatal(err)
	}
	type k struct {
		line, col   int64
		self, total time.Duration
	}
	var got []k
	for _, f := range tab.Functions {
		if f.Name != "(anonymous)" || f.File != "a.js" {
			t.Errorf("row %s %s, want (anonymous) a.js", f.Name, f.File)
		}
		got = append(got, k{f.Line, f.Column, time.Duration(f.Self), time.Duration(f.Total)})
	}
	ms := time.Millisecond
	want := []k{{1, 9, 18 * ms, 18 * ms}, {2, 0, 12 * ms, 12 * ms}, {1, 5, 1 * ms, 17 * ms}}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// Deep nesting costs O(1) per event, and the frames held by all call paths
// are bounded.
func TestStackFrameLimit(t *testing.T) {
	defer func(n int64) { maxStackFrames = n }(maxStackFrames)
	maxStackFrames = 100
	var b strings.Builder
	b.WriteString(head + `"shared":{"frames":[{"name":"a"},{"name":"b"}]},"profiles":[{"type":"evented","name":"deep","unit":"nanoseconds","startValue":0,"endValue":0,"events":[`)
	// 13 nested frames: call paths of depth 1..13 hold 91 frames; a
	// second child at the bottom adds 14 more, past the limit.
	depth := 13
	for i := range depth {
		fmt.Fprintf(&b, `{"type":"O","frame":0,"at":%d},`, i)
	}
	b.WriteString(`{"type":"O","frame":1,"at":20},{"type":"C","frame":1,"at":21},`)
	for i := range depth {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"C","frame":0,"at":%d}`, 30+i)
	}
	b.WriteString(`]}]}`)
	_, err := Parse(strings.NewReader(b.String()), pbuild.Options{})
	want := `profile 0 ("deep"): the stacks of its 14 call paths hold 105 frames, more than the limit of 100`
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %s", err, want)
	}
	maxStackFrames = 105
	p, err := Parse(strings.NewReader(b.String()), pbuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := rows(t, p)
	// a is open 0..30+12 = 42ns; b runs 20..21; a's self is the rest.
	checkRows(t, got, map[string]row{"a": {41, 42, 13, 14}, "b": {1, 1, 1, 1}})
}

// Numbers in samples and weights may be written in any JSON form, with any
// whitespace; a null stack is empty.
func TestNumberForms(t *testing.T) {
	in := head + `"shared":{"frames":[{"name":"a"},{"name":"b"}]},"profiles":[{"type":"sampled","name":"p","unit":"milliseconds",
"samples":[ [ 0 ,
	1.0e0 ] ,[0E0],null,[] ],"weights":[ 2.5e0, 1000000e-6 ,0.5 , 1 ]}]}`
	got, tab := rows(t, parseString(t, in))
	ms := time.Millisecond
	checkRows(t, got, map[string]row{"a": {1 * ms, 3500 * time.Microsecond, 1, 2}, "b": {2500 * time.Microsecond, 2500 * time.Microsecond, 1, 1}})
	if time.Duration(tab.Total) != 5*ms {
		t.Errorf("total %v, want 5ms", tab.Total)
	}
}
