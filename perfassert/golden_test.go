package perfassert_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/loaders"
	"github.com/hotbudget/hotbudget/perfassert"
)

var update = flag.Bool("update", false, "rewrite the golden failure texts under testdata/perfassert/failures")

// TestFailureTextGolden pins whole failure texts (the substring tests above
// pin their parts): the text is for people and may change, but only on
// purpose. Refresh with go test ./perfassert -run Golden -update.
func TestFailureTextGolden(t *testing.T) {
	hand := load(t, handFolded)
	busy, err := loaders.Load("../testdata/pprof/busy.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	tests := []struct {
		name string
		run  func(perfassert.TestingT)
	}{
		{"self-time", func(t perfassert.TestingT) {
			perfassert.MaxSelfTime(t, hand, "main.busy", 50*ms, perfassert.Named("hand"))
		}},
		{"total-share-regexp", func(t perfassert.TestingT) {
			perfassert.MaxTotalShare(t, hand, `^main\.(busy|helper)$`, 0.5, perfassert.Regexp(), perfassert.Named("hand"))
		}},
		{"missing", func(t perfassert.TestingT) {
			perfassert.MaxSelfTime(t, busy, "main.parseRecord", time.Second, perfassert.Named("busy.pb.gz"))
		}},
		{"allow-missing", func(t perfassert.TestingT) {
			perfassert.MaxSelfTime(t, busy, "main.gone", time.Second, perfassert.AllowMissing(), perfassert.Named("busy.pb.gz"))
		}},
		{"few-samples", func(t perfassert.TestingT) {
			perfassert.MaxSelfTime(t, busy, "crypto/internal/fips140/sha256.New", 10*ms, perfassert.Named("busy.pb.gz"))
		}},
		{"real-total-time", func(t perfassert.TestingT) {
			perfassert.MaxTotalTime(t, busy, "main.hashBlock", time.Second, perfassert.Named("busy.pb.gz"))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeT{}
			tc.run(ft)
			got := ft.text()
			for _, l := range ft.logs {
				got += "log: " + l
			}
			got += "\n"
			path := filepath.Join("..", "testdata", "perfassert", "failures", tc.name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (create with -update)", err)
			}
			if got != string(want) {
				t.Errorf("failure text differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
}
