package loaders

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
)

// TestLoadRefusesValuesItCannotSum: a negative sample value, or values
// whose sum overflows int64, are refused by Load in every format whose
// values come from the file, with an error naming the file and what is
// wrong. Summed, they gave a function at "-4ns" and shares of -150% and
// 250%.
func TestLoadRefusesValuesItCannotSum(t *testing.T) {
	dir := t.TempDir()
	ok := testutil.Sample{Stack: []string{"main.main", "main.ok"}, Nanos: 100e6}
	big := func(leaf string) testutil.Sample {
		return testutil.Sample{Stack: []string{"main.main", leaf}, Nanos: 1 << 62}
	}
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name, path, want string
	}{
		{"pprof negative", testutil.WriteProfile(t, dir, "neg.pb.gz", testutil.TimeProfile(ok,
			testutil.Sample{Stack: []string{"main.main", "main.neg"}, Nanos: -300e6})),
			"sample 1 has a negative samples/count value, -30"},
		{"pprof overflow", testutil.WriteProfile(t, dir, "over.pb.gz", testutil.TimeProfile(big("main.a"), big("main.b"))),
			"sample 1: the cpu/nanoseconds values add up to more than 9223372036854775807 nanoseconds"},
		{"folded negative", write("neg.folded", "main;ok 10\nmain;neg -30\n"), "line 2: count \"-30\" is not a non-negative integer"},
		// 2^62 ns as folded counts (1ms each): 4611686018428 ms a line.
		{"folded overflow", write("over.folded", "main;a 4611686018428\nmain;b 4611686018428\n"),
			"line 2: count 4611686018428 makes the total time overflow int64 nanoseconds"},
		{"speedscope negative", write("neg.speedscope.json", `{"$schema":"https://www.speedscope.app/file-format-schema.json",
			"shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","name":"p","unit":"nanoseconds","startValue":0,"endValue":10,
			"samples":[[0],[0]],"weights":[5,-3]}]}`), "negative weight"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Load(tc.path)
			if err == nil {
				t.Fatalf("loaded %d samples, want an error", len(p.Sample))
			}
			if !strings.HasPrefix(err.Error(), tc.path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q naming %s", err, tc.want, tc.path)
			}
		})
	}
}
