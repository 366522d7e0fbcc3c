package speedscope

import (
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// FuzzParse checks that Parse never panics and that whatever it accepts is
// valid, writes, and reads back with the same self and total per function.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(corpus, "*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(sampledFile("microseconds", "[1.5,2.5]")))
	f.Add([]byte(`{"profiles":[{"type":"evented","name":"","unit":"seconds","events":[{"type":"O","frame":0,"at":0},{"type":"O","frame":0,"at":1},{"type":"C","frame":0,"at":2},{"type":"C","frame":0,"at":3}]}],"shared":{"frames":[{"name":"r","line":2,"col":3}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, ok := testutil.ParseValid(t, Parse, data)
		if !ok {
			return
		}
		want, err := analysis.Functions(p)
		if err != nil {
			t.Fatal(err)
		}
		q, out, err := testutil.Rewrite(t, Parse, Write, p)
		if err != nil {
			t.Fatalf("Parse of written file: %v\n%s", err, out)
		}
		got, err := analysis.Functions(q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Total != want.Total {
			t.Fatalf("total %v after the round trip, want %v", got.Total, want.Total)
		}
		type k struct {
			name, file string
			line, col  int64
		}
		sum := func(tab *analysis.Table) (map[k][2]int64, bool) {
			m := make(map[k][2]int64)
			for _, r := range tab.Functions {
				if !utf8.ValidString(r.Name) || !utf8.ValidString(r.File) {
					return nil, false // JSON output replaces invalid UTF-8
				}
				key := k{r.Name, r.File, r.Line, r.Column}
				if _, dup := m[key]; dup {
					return nil, false // one frame cannot hold two functions
				}
				m[key] = [2]int64{int64(r.Self), int64(r.Total)}
			}
			return m, true
		}
		wm, ok1 := sum(want)
		gm, ok2 := sum(got)
		if !ok1 || !ok2 {
			return
		}
		for key, w := range wm {
			if gm[key] != w {
				t.Fatalf("%v: self/total %v after the round trip, want %v", key, gm[key], w)
			}
		}
	})
}
