package chrometrace

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// FuzzParse: any input gives a valid profile or an error, never a panic
// or a hang; a profile it gives can be analysed and its self times add up.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(corpus, "trace-event", "*.json"))
	seeds = append(seeds, seedTrace, filepath.Join(corpus, "chrome-trace", "no-arg-data.json"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) <= 64<<10 {
			f.Add(b, uint8(0))
		}
	}
	_, trace := genPair(40, 8, 3)
	f.Add(trace, uint8(1))
	f.Add([]byte(`[{"ph":"B","name":"a","ts":1},{"ph":"X","name":"b","ts":"1.5","dur":2},{"ph":"E","ts":3}`), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, view uint8) {
		v := []string{"", pbuild.ViewSamples, pbuild.ViewDurations}[int(view)%3]
		p, err := Parse(bytes.NewReader(data), pbuild.Options{View: v})
		if err != nil {
			if p != nil {
				t.Fatal("profile and error")
			}
			return
		}
		if err := p.CheckValid(); err != nil {
			t.Fatal(err)
		}
		tb, err := analysis.Functions(p)
		if err != nil {
			t.Fatal(err)
		}
		var self int64
		for _, fn := range tb.Functions {
			self += int64(fn.Self)
			if fn.Self < 0 || fn.Total < fn.Self {
				t.Fatalf("%s: self %v total %v", fn.Name, fn.Self, fn.Total)
			}
		}
		if self != int64(tb.Total) {
			t.Fatalf("self times sum to %d, total %d", self, tb.Total)
		}
	})
}
