package speedscope

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite golden files")

const golden = "../../testdata/speedscope"

type fkey struct {
	name, file string
	line, col  int64
}

// functions returns self and total per (name, file, line, column) of the
// analysis rows; it fails if two functions share all four, since a
// speedscope frame cannot tell them apart.
func functions(t *testing.T, p *profile.Profile) (map[fkey][2]time.Duration, time.Duration) {
	t.Helper()
	tab, err := analysis.Functions(p)
	if err != nil {
		t.Fatal(err)
	}
	m := testutil.Unique(t, tab.Functions, func(f analysis.Function) (fkey, [2]time.Duration) {
		// speedscope has no negative lines: Write leaves them out (pprof.out
		// has unconverted V8 lines of -1).
		return fkey{f.Name, f.File, max(f.Line, 0), max(f.Column, 0)}, [2]time.Duration{time.Duration(f.Self), time.Duration(f.Total)}
	})
	return m, time.Duration(tab.Total)
}

// roundTrip writes p as speedscope, reads it back and checks that every
// function's self and total are unchanged.
func roundTrip(t *testing.T, p *profile.Profile) *profile.Profile {
	t.Helper()
	q, out, err := testutil.Rewrite(t, Parse, Write, p)
	if !json.Valid(out) {
		t.Fatalf("Write produced invalid JSON")
	}
	if err != nil {
		t.Fatalf("Parse of written file: %v\n%s", err, truncate(string(out), 2000))
	}
	want, wantTotal := functions(t, p)
	got, gotTotal := functions(t, q)
	if gotTotal != wantTotal {
		t.Errorf("total: got %v after the round trip, want %v", gotTotal, wantTotal)
	}
	if len(got) != len(want) {
		t.Errorf("got %d functions after the round trip, want %d", len(got), len(want))
	}
	for k, w := range want {
		if g := got[k]; g != w {
			t.Errorf("%v: got self/total %v/%v after the round trip, want %v/%v", k, g[0], g[1], w[0], w[1])
		}
	}
	return q
}

func TestRoundTripPprof(t *testing.T) {
	for _, name := range []string{"sample.cpu", "simple.prof", "large.cpu", "go.crc32.cpu", "pprof.out"} {
		t.Run(name, func(t *testing.T) {
			q := roundTrip(t, testutil.ReadPprof(t, filepath.Join("../../testdata/corpus/pprof", name)))
			if len(q.Sample) == 0 {
				t.Error("no samples after the round trip")
			}
		})
	}
}

func TestRoundTripSpeedscope(t *testing.T) {
	for _, name := range []string{"simple.speedscope.json", "simple-sampled.speedscope.json", "two-sampled.speedscope.json"} {
		t.Run(name, func(t *testing.T) {
			q := roundTrip(t, parseFile(t, filepath.Join(corpus, name)))
			if name == "two-sampled.speedscope.json" {
				// Profiles stay apart.
				got, _ := rows(t, q, analysis.Selection{Threads: []string{"two"}})
				if got["b"].total != 14*time.Second {
					t.Errorf("thread two: total b = %v, want 14s", got["b"].total)
				}
			}
		})
	}
}

// handProfile has two threads, an inlined frame, a location without
// function and one with an empty function name.
func handProfile() *profile.Profile {
	m := &profile.Mapping{ID: 1, File: "/usr/lib/libc.so.6"}
	mainFn := &profile.Function{ID: 1, Name: "main.main", Filename: "main.go"}
	inl := &profile.Function{ID: 2, Name: "main.inlined", Filename: "main.go"}
	work := &profile.Function{ID: 3, Name: `main.work"quoted"`, Filename: "work.go"}
	anon := &profile.Function{ID: 4, Name: "", Filename: "x.go"}
	l1 := &profile.Location{ID: 1, Line: []profile.Line{{Function: mainFn, Line: 10}}}
	l2 := &profile.Location{ID: 2, Line: []profile.Line{{Function: inl, Line: 20, Column: 4}, {Function: work, Line: 30}}}
	l3 := &profile.Location{ID: 3, Mapping: m, Address: 0x1234}
	l4 := &profile.Location{ID: 4, Line: []profile.Line{{Function: anon, Line: 1}}}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10e6,
		Mapping:    []*profile.Mapping{m},
		Function:   []*profile.Function{mainFn, inl, work, anon},
		Location:   []*profile.Location{l1, l2, l3, l4},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{l2, l1}, Value: []int64{3, 30e6}, Label: map[string][]string{"thread": {"main"}}},
			{Location: []*profile.Location{l3, l2, l1}, Value: []int64{1, 10e6}, Label: map[string][]string{"thread": {"main"}}},
			{Location: []*profile.Location{l1}, Value: []int64{2, 20e6}, Label: map[string][]string{"tid": {"7"}, "pid": {"1"}}},
			{Location: []*profile.Location{l4, l1}, Value: []int64{1, 5e6}},
		},
	}
}

func TestWriteGolden(t *testing.T) {
	p := handProfile()
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(golden, "hand.golden.json")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("Write output differs from %s (run with -update if intended):\n%s", path, buf.String())
	}
	q := roundTrip(t, p)
	// Threads become profiles and come back as thread labels.
	ms := time.Millisecond
	for _, tc := range []struct {
		thread string
		total  time.Duration
	}{{"main", 40 * ms}, {"pid 1 tid 7", 20 * ms}, {"all", 5 * ms}} {
		_, tab := rows(t, q, analysis.Selection{Threads: []string{tc.thread}})
		if time.Duration(tab.Total) != tc.total {
			t.Errorf("thread %q: total %v, want %v", tc.thread, tab.Total, tc.total)
		}
	}
	// The written file has what the brief promises.
	s := buf.String()
	for _, want := range []string{`"$schema":"https://www.speedscope.app/file-format-schema.json"`, `"exporter":"hotbudget"`,
		`"activeProfileIndex":0`, `"unit":"nanoseconds"`, `{"name":"main.inlined","file":"main.go","line":20,"col":4}`, `{"name":"main.work\"quoted\"","file":"work.go","line":30}`, `{"name":"[libc.so.6]"}`} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %s", want)
		}
	}
}

func TestWriteDoesNotModify(t *testing.T) {
	p := handProfile()
	before := p.String()
	if err := Write(&bytes.Buffer{}, p); err != nil {
		t.Fatal(err)
	}
	if p.String() != before {
		t.Error("Write modified its input")
	}
}

func TestWriteErrors(t *testing.T) {
	neg := handProfile()
	neg.Sample[1].Value[1] = -5
	bytesProf := handProfile()
	bytesProf.SampleType[1] = &profile.ValueType{Type: "alloc_space", Unit: "bytes"}
	for _, tc := range []struct {
		name string
		p    *profile.Profile
		want string
	}{
		{"negative value", neg, "sample 1: negative value -5"},
		{"not time", bytesProf, "not a time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Write(&bytes.Buffer{}, tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestWriteEmpty(t *testing.T) {
	p := handProfile()
	p.Sample = nil
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	q, err := Parse(&buf, pbuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Sample) != 0 {
		t.Errorf("%d samples, want 0", len(q.Sample))
	}
}

// appendString must agree with encoding/json on what the string decodes to.
func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uo\te`, "tab\tnl\ncr\r\x00\x1f", "<&>", "héllo 世界", "bad\xffutf8\xc3", "\u2028"} {
		var got, want string
		if err := json.Unmarshal(appendString(nil, s), &got); err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		b, _ := json.Marshal(s)
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%q decodes to %q, want %q", s, got, want)
		}
	}
}
