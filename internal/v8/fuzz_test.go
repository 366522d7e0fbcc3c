package v8

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
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
		testutil.CheckProfile(t, "parsed profile", p)
	})
}
