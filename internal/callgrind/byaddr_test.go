package callgrind

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// byAddrDump is a dump as the exact instrument writes it (--dump-instr=yes,
// --compress-pos=no): F's code at 0x1000-0x1013 with g inlined at
// 0x1004-0x100b, whose call at 0x1008 calls H twice; a jump callgrind took
// for a call from F's 0x100c into F's own 0x1010; H at 0x2000; and code
// at 0x9000 the symbolizer does not know; and J's code at 0x3000, which
// F jumped to (a tail call callgrind kept in F's block).
const byAddrDump = `# callgrind format
version: 1
creator: callgrind-3.19.0
positions: instr line
events: Ir
ob=/bin/x
fl=???
fn=0x0000000000001000
0x1000 0 10
0x1004 0 5
cfn=0x0000000000002000
calls=2 0x2000 0
0x1008 0 100
0x100c 0 3
0x3000 0 6
cfn=0x0000000000001010
calls=1 0x1010 0
0x100c 0 7

fn=0x0000000000001010
0x1010 0 7

fn=0x0000000000002000
0x2000 0 60
0x2004 0 40

fn=0x0000000000009000
0x9000 0 4
`

func byAddrSym(addr uint64) ([]Frame, bool) {
	F, g, H := Frame{"m.F", "f.go"}, Frame{"m.g", "g.go"}, Frame{"m.H", "h.go"}
	switch {
	case addr == 0x3000:
		return []Frame{{"m.J", "j.go"}}, true
	case addr >= 0x1004 && addr < 0x100c:
		return []Frame{F, g}, true
	case addr >= 0x1000 && addr < 0x1014:
		return []Frame{F}, true
	case addr >= 0x2000 && addr < 0x2008:
		return []Frame{H}, true
	}
	return nil, false
}

// stacksOf is p's samples as "leaf;...;root value" lines, sorted.
func stacksOf(p *profile.Profile) []string {
	var out []string
	for _, s := range p.Sample {
		var names []string
		for _, l := range s.Location {
			for _, ln := range l.Line {
				names = append(names, ln.Function.Name)
			}
		}
		out = append(out, strings.Join(names, ";")+" "+strconv.FormatInt(s.Value[0], 10))
	}
	slices.Sort(out)
	return out
}

// TestParseByAddress checks the address mode against the costs worked out
// by hand: self by the innermost function at each address, the inlined g
// a callee of F that makes F's calls to H, the jump within F left out, the
// code F jumped to its callee, and the unknown code named as callgrind
// named it.
func TestParseByAddress(t *testing.T) {
	p, err := ParseByAddress(strings.NewReader(byAddrDump), pbuild.Options{}, byAddrSym)
	if err != nil {
		t.Fatal(err)
	}
	testutil.CheckProfile(t, "by address", p)
	want := []string{
		"0x0000000000009000 4",
		"m.F 20",          // 10 + 3 at F's addresses, 7 at 0x1010
		"m.H;m.g;m.F 100", // g's call, inclusive
		"m.J;m.F 6",       // jumped to from F
		"m.g;m.F 5",
	}
	if got := stacksOf(p); !slices.Equal(got, want) {
		t.Errorf("stacks:\n got %q\nwant %q", got, want)
	}
	for _, f := range p.Function {
		if f.Name == "m.g" && f.Filename != "g.go" {
			t.Errorf("g's file is %q, want g.go", f.Filename)
		}
	}
}

// TestParseByAddressNeedsSymbolizer checks the error without one.
func TestParseByAddressNeedsSymbolizer(t *testing.T) {
	if _, err := ParseByAddress(strings.NewReader(byAddrDump), pbuild.Options{}, nil); err == nil {
		t.Error("no error without a symbolizer")
	}
}

// FuzzParseByAddress checks that the address mode never panics and that
// what it accepts is a valid profile, with a symbolizer that names some
// addresses with inlined frames.
func FuzzParseByAddress(f *testing.F) {
	f.Add([]byte(byAddrDump))
	for _, s := range edgeCases {
		f.Add([]byte(s.in))
	}
	sym := func(addr uint64) ([]Frame, bool) {
		switch addr % 3 {
		case 0:
			return nil, false
		case 1:
			return []Frame{{"p.A", "a.go"}}, true
		}
		return []Frame{{"p.A", "a.go"}, {"p.b", "b.go"}}, true
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, ok := testutil.ParseValid(t, func(r io.Reader, o pbuild.Options) (*profile.Profile, error) {
			return ParseByAddress(r, o, sym)
		}, data)
		if !ok {
			return
		}
		testutil.CheckProfile(t, "fuzz", p)
	})
}
