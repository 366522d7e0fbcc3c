package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/atomicfile"
)

// TestHTMLAllocsInBrowser opens the allocations' HTML report (record
// --allocs-html) in Chromium: the differential flame graph of bytes per op
// draws its frames, marks the function that allocates more and colours it
// red, and the page reports no error.
func TestHTMLAllocsInBrowser(t *testing.T) {
	inRepoRoot(t)
	table := func(extra float64) *diff.AllocTable {
		self := 200 + extra
		return &diff.AllocTable{Work: 100,
			Funcs: map[string]*diff.AllocFunc{
				"example.com/m.parse": {Self: diff.AllocCount{Objects: self, Bytes: 16 * self}, Total: diff.AllocCount{Objects: self, Bytes: 16 * self}},
				"example.com/m.Bench": {Self: diff.AllocCount{Objects: 100, Bytes: 6400}, Total: diff.AllocCount{Objects: 100 + self, Bytes: 6400 + 16*self}},
			},
			Judged: diff.AllocCount{Objects: 100 + self, Bytes: 6400 + 16*self},
			Stacks: map[string]diff.AllocCount{
				"example.com/m.Bench\x00example.com/m.parse": {Objects: self, Bytes: 16 * self},
				"example.com/m.Bench":                        {Objects: 100, Bytes: 6400},
			},
		}
	}
	rep := diff.CompareAllocs(table(0), table(100), "op", diff.DefaultAllocTolerance)
	rep.Name = "example.com/m BenchmarkA"
	reps := []*diff.AllocReport{rep}
	out := filepath.Join(t.TempDir(), "allocs.html")
	if err := atomicfile.Write(out, func(f *os.File) error { return reps[0].Write(f, "html") }); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.open(out)
	st := p.state()
	if st.Nodes < 3 || st.Drawn < 2 || !slices.Contains(st.Marked, "example.com/m.parse") {
		t.Errorf("state %+v: want the frames drawn and parse marked", st)
	}
	if text := eval[string](p, `document.body.innerText`); !containsAll(text, "regressed", "example.com/m.parse", "exact") {
		t.Errorf("page text lacks the verdict:\n%s", text)
	}
	f := p.frame("example.com/m.parse")
	if f.W <= 0 {
		t.Errorf("parse's frame has width %v", f.W)
	}
	// Its bytes grew 50%, beyond the tolerance: drawn red.
	if c := p.pixel(f.X+f.W/2, f.Y+f.H/2); c[0] < c[2]+80 {
		t.Errorf("parse's frame is coloured %v, want red", c)
	}
	p.screenshot("testdata/html/allocs.png")
	p.noErrors()
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
