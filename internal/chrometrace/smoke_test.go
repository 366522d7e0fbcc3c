package chrometrace

import (
	"path/filepath"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

func TestSmoke(t *testing.T) {
	for _, f := range corpusFiles(t) {
		for _, v := range []string{"", "durations"} {
			p, err := parseFile(t, f, v)
			if err != nil {
				t.Logf("%s %q: ERROR %v", filepath.Base(f), v, err)
				continue
			}
			tb, err := analysis.Functions(p)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %q: %d samples, %d fns, total %v, exact %v, warnings %q", filepath.Base(f), v, len(p.Sample), len(tb.Functions), tb.Total, pbuild.IsExact(p), pbuild.Warnings(p))
		}
	}
}
