package chrometrace

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
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
		testutil.CheckProfile(t, "parsed profile", p)
	})
}
