package v8

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// FuzzParse: any input gives a valid profile or an error, never a panic or
// hang; a profile it gives can be analysed, and its self times add up.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.cpuprofile")
	seeds = append(seeds,
		corpus+"/cpuprofile/simple.cpuprofile",
		corpus+"/cpuprofile/example.cpuprofile",
		"../../testdata/cpuprofile/busy.cpuprofile",
	)
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) <= 64<<10 {
			f.Add(b)
		}
	}
	f.Add([]byte(deepChain(50, false)))
	f.Add([]byte(deepLegacy(50)))
	f.Add([]byte(`{"profile":{"nodes":[{"id":1,"callFrame":{"functionName":"(root)"}}],"samples":[1],"timeDeltas":[0]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(bytes.NewReader(data), pbuild.Options{Name: "CPU.20250510.134625.51430.0.001.cpuprofile"})
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
