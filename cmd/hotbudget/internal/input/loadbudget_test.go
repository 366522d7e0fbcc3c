package input

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/internal/amplify"
	"github.com/hotbudget/hotbudget/internal/membudget"
)

// TestLoadFilesWithinBudget: the loads that run at once never hold more
// than the budget together, a file costing more than the whole budget
// loads alone (and does not wait forever), and results keep their order.
func TestLoadFilesWithinBudget(t *testing.T) {
	costs := map[string]int64{"a": 60, "b": 60, "c": 30, "d": 30, "e": 500, "f": 10, "g": 90}
	files := []string{"a", "b", "c", "d", "e", "f", "g"}
	const budget = 100
	var mu sync.Mutex
	held, peak, running, most := int64(0), int64(0), 0, 0
	out, _, err := loadFilesWithin(files, 4, budget, func(f string) int64 { return costs[f] },
		func(f string) (string, []string, error) {
			w := min(costs[f], budget)
			mu.Lock()
			held += w
			running++
			peak, most = max(peak, held), max(most, running)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			held -= w
			running--
			mu.Unlock()
			return "loaded " + f, nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		if out[i] != "loaded "+f {
			t.Errorf("result %d is %q, want %q", i, out[i], "loaded "+f)
		}
	}
	if peak > budget {
		t.Errorf("loads held %d bytes at once, more than the budget of %d", peak, budget)
	}
	if most > 4 {
		t.Errorf("%d loads at once with 4 workers", most)
	}
}

// TestLoadCost: a file's cost is estimated from its size, or from what a
// gzip trailer claims when that is more.
func TestLoadCost(t *testing.T) {
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw.pb")
	if err := os.WriteFile(raw, amplify.Header(), 0o644); err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(dir, "claims.pb.gz")
	f, err := os.Create(gz)
	if err != nil {
		t.Fatal(err)
	}
	if err := amplify.GzipTrailer(f, 1000, 1<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, c := range []struct {
		path string
		want int64
	}{
		{raw, int64(len(amplify.Header())) * (membudget.Ratio / 2)},
		{gz, 1 << 20 * (membudget.Ratio / 2)},
		{filepath.Join(dir, "missing"), 0},
	} {
		if got := loadCost(c.path); got != c.want {
			t.Errorf("loadCost(%s) = %d, want %d", filepath.Base(c.path), got, c.want)
		}
	}
}
