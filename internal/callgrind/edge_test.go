package callgrind

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// spec is the extended example of valgrind's "Callgrind Format
// Specification", with name compression.
const spec = `# callgrind format
events: Instructions
fl=(1) file1.c
fn=(1) main
16 20
cfn=(2) func1
calls=1 50
16 400
cfi=(2) file2.c
cfn=(3) func2
calls=3 20
16 400
fn=(2)
51 100
cfi=(2)
cfn=(3)
calls=2 20
51 300
fl=(2)
fn=(3)
20 700
`

var edgeCases = []struct {
	name, in string
	// want is "file:function self total" per function of the default
	// type, or the start of the error.
	want []string
	err  string
}{
	{name: "spec", in: spec, want: []string{"file2.c:func2 700 700", "file1.c:func1 100 400", "file1.c:main 20 820"}},
	{name: "recursion", in: "events: Ir\nfn=f\n1 60\ncfn=f\ncalls=2 1\n1 50\nfn=main\n1 5\ncfn=f\ncalls=1 1\n1 60\n",
		// callgrind_annotate: f 60+50 = 110; a profile counts f once.
		want: []string{"???:f 60 60", "???:main 5 65"}},
	{name: "instr", in: "positions: instr line\nevents: Ir Dr\nfn=a\n0x10 3 1 1\n+2 * 1\ncfn=b\ncalls=1 +0x20 9\n* * 4 2\n-1 +1 1\nfn=b\n0x32 9 4 2\n",
		want: []string{"???:b 4 4", "???:a 3 7"}},
	{name: "inlined", in: "events: Ir\nfl=a.c\nfn=f\n1 1\nfi=h.h\n2 5\nfe=a.c\n3 1\nfn=main\n1 1\ncfn=f\ncalls=1 1\n1 7\n",
		want: []string{"h.h:f 5 5", "a.c:f 2 7", "a.c:main 1 8"}},
	{name: "parts", in: "events: Ir\npart: 1\nfn=main\n1 3\npart: 2\nsummary: 99999\nevents: Ir\nfn=main\n1 4\n", want: []string{"???:main 7 7"}},
	{name: "no events", in: "fn=main\n1 3\n", err: "line 2: cost line before the events: header line"},
	{name: "no fn", in: "events: Ir\n1 3\n", err: "line 2: cost line before any fn= line"},
	{name: "bad cost", in: "events: Ir\nfn=a\n1 x\n", err: `line 3: cost "x" is not a count`},
	{name: "negative cost", in: "events: Ir\nfn=a\n1 -3\n", err: `line 3: cost "-3" is not a count`},
	{name: "too many costs", in: "events: Ir\nfn=a\n1 3 4\n", err: "line 3: 2 costs, but the events: line names 1 events"},
	{name: "undefined id", in: "events: Ir\nfn=(3)\n1 3\n", err: "line 2: fn=: (3) refers to no name defined before"},
	{name: "calls at end", in: "events: Ir\nfn=a\ncfn=b\ncalls=1 1\n", err: "line 4: calls= line at the end of the file"},
	{name: "calls then spec", in: "events: Ir\nfn=a\ncfn=b\ncalls=1 1\nfn=c\n1 1\n", err: "line 5: fn= line after the calls= line 4"},
	{name: "calls without cfn", in: "events: Ir\nfn=a\ncalls=1 1\n1 1\n", err: "line 3: calls= before any cfn= line"},
	{name: "garbage", in: "events: Ir\nfn=a\nhello world\n", err: `line 3: "hello world" is neither`},
	{name: "version 2", in: "version: 2\nevents: Ir\n", err: "line 1: version \"2\""},
	{name: "no cost lines", in: "events: Ir\nfn=a\n", err: "no cost lines"},
	{name: "overflow", in: "events: Ir\nfn=a\n1 9223372036854775807\n1 1\n", err: "line 4: the self cost of a: costs add up to more than int64 holds"},
	{name: "bad position", in: "events: Ir\nfn=a\n+x 1\n", err: `line 3: position "+x" is not a number`},
	{name: "twice", in: "events: Ir Ir\n", err: "line 1: events: \"Ir Ir\" lists Ir twice"},
	{name: "twice in a later part", in: "events: Ir Dr\nfn=a\n1 1\npart: 2\nevents: Dr Dr\n", err: "line 5: events: \"Dr Dr\" lists Dr twice"},
	// A count is one value space in both bases: 2^63 is no count, in hex
	// as in decimal, and never the parser's own "no call pending".
	{name: "calls 2^63 hex", in: "events: Ir\nfn=main\n0 1\ncfn=f\ncalls=0x8000000000000000 0\n0 5\nfn=f\n0 5\n",
		err: `line 5: calls=0x8000000000000000 0: count "0x8000000000000000" is not a count`},
	{name: "calls 2^63 decimal", in: "events: Ir\nfn=main\n0 1\ncfn=f\ncalls=9223372036854775808 0\n0 5\nfn=f\n0 5\n",
		err: `line 5: calls=9223372036854775808 0: count "9223372036854775808" is not a count`},
	{name: "calls 2^64-1 hex", in: "events: Ir\nfn=main\n0 1\ncfn=f\ncalls=0xffffffffffffffff 0\n0 5\nfn=f\n0 5\n",
		err: `line 5: calls=0xffffffffffffffff 0: count "0xffffffffffffffff" is not a count`},
	{name: "calls 2^63-1 hex", in: "events: Ir\nfn=main\n0 1\ncfn=f\ncalls=0x7fffffffffffffff 0\n0 5\nfn=f\n0 5\n",
		want: []string{"???:f 5 5", "???:main 1 6"}},
	{name: "calls 0", in: "events: Ir\nfn=main\n0 1\ncfn=f\ncalls=0 0\n0 5\nfn=f\n0 5\n",
		want: []string{"???:f 5 5", "???:main 1 6"}},
	{name: "cost 2^63 hex", in: "events: Ir\nfn=a\n1 0x8000000000000000\n", err: `line 3: cost "0x8000000000000000" is not a count`},
	{name: "cost 2^63-1 hex", in: "events: Ir\nfn=a\n1 0x7fffffffffffffff\n", want: []string{"???:a 9223372036854775807 9223372036854775807"}},
	// Positions are addresses: 64 bits in either base.
	{name: "position 2^64-1", in: "events: Ir\nfn=a\n18446744073709551615 1\n0xffffffffffffffff 2\n", want: []string{"???:a 3 3"}},
	{name: "position 2^64", in: "events: Ir\nfn=a\n18446744073709551616 1\n", err: `line 3: position "18446744073709551616" is not a number`},
	{name: "many costs", in: "events: Ir\nfn=a\n1 1 2 3 4 5\n", err: "line 3: more than 2 costs, but the events: line names 1 events"},
}

func TestEdgeCases(t *testing.T) {
	for _, c := range edgeCases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse(strings.NewReader(c.in), pbuild.Options{})
			if c.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.err) {
					t.Fatalf("error %v, want %q...", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tab, err := analysis.Functions(p)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range tab.Functions {
				got = append(got, strings.Join([]string{key(f), itoa(int64(f.Self)), itoa(int64(f.Total))}, " "))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestMeter holds a file of many tiny functions to the memory budget.
func TestMeter(t *testing.T) {
	var b strings.Builder
	b.WriteString("events: Ir\n")
	for i := range 200000 {
		b.WriteString("fn=f")
		b.WriteString(itoa(int64(i)))
		b.WriteString("\n1 1\n")
	}
	m := &membudget.Meter{Max: 1 << 20}
	_, err := Parse(strings.NewReader(b.String()), pbuild.Options{Meter: m})
	if !errors.Is(err, membudget.ErrTooLarge) || !strings.Contains(err.Error(), "functions") {
		t.Fatalf("error %v, want ErrTooLarge naming the functions", err)
	}
}

// TestModel pins the sample types, the exact mark, labels and warnings.
func TestModel(t *testing.T) {
	p := parseFile(t, "c-threads")
	if p.DefaultSampleType != "instructions" || p.SampleType[0].Type != "instructions" || p.SampleType[0].Unit != "count" {
		t.Errorf("sample types %v, default %q", p.SampleType, p.DefaultSampleType)
	}
	if !pbuild.IsExact(p) {
		t.Error("not marked exact")
	}
	tids := make(map[string]bool)
	for _, s := range p.Sample {
		if s.Label[pbuild.LabelPID] == nil || s.Label[pbuild.LabelProcess][0] != "cgprog" {
			t.Fatalf("sample labels %v", s.Label)
		}
		tids[s.Label[pbuild.LabelTID][0]] = true
	}
	if len(tids) != 3 {
		t.Errorf("threads %v, want 3", tids)
	}
	q := parseFile(t, "c-instr")
	if len(q.SampleType) != 13 || q.SampleType[1].Type != "dr" {
		t.Errorf("sample types %v", q.SampleType)
	}
	if w := pbuild.Warnings(q); len(w) != 1 || !strings.Contains(w[0], "_Exit") {
		t.Errorf("warnings %q, want the one on _Exit's call", w)
	}
}
