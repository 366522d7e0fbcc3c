package chrometrace

import (
	"path/filepath"
	"testing"

	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// TestCorpusTable: every corpus trace loads (FORMATS.md refuses none of
// them) in both views; profiles are valid and their self times add up.
func TestCorpusTable(t *testing.T) {
	type want struct {
		sampled bool   // default view
		samples int64  // total sample count in the default view (0: not checked)
		warn    string // a warning the default view must carry ("" none checked)
		tids    string // tid label of the samples in the default view ("" not checked)
	}
	tests := map[string]want{
		// Profile on tid 259, chunks on 5143; seven negative deltas.
		"chrome-trace/Trace-20230603T221323.json.gz":    {true, 0, "negative timeDeltas", "259"},
		"chrome-trace/invalid-animation-events.json.gz": {true, 0, "", ""},
		// Two nodes name parents in no chunk; a chunk has no args.data.
		"chrome-trace/no-arg-data.json":              {true, 0, "which is in no chunk: attached to the root", "6209019"},
		"chrome-trace/simple-timeline.json.gz":       {true, 4081, "", "775"},
		"chrome-trace/simple.json.gz":                {true, 0, "", "775"},
		"chrome-trace/worker.json.gz":                {true, 0, "", ""},
		"trace-event/simple-with-samples.json":       {true, 7, "", "7695"},
		"trace-event/multi-thread-with-samples.json": {true, 8, "", ""},
	}
	files := corpusFiles(t)
	if len(files) < 30 {
		t.Fatalf("only %d corpus files", len(files))
	}
	for _, f := range files {
		rel, _ := filepath.Rel(corpus, f)
		t.Run(rel, func(t *testing.T) {
			w, ok := tests[filepath.ToSlash(rel)]
			if !ok {
				w = want{sampled: false} // trace-event edge cases: durations only
			}
			for _, view := range []string{"", pbuild.ViewSamples, pbuild.ViewDurations} {
				p, err := parseFile(t, f, view)
				if err != nil {
					t.Fatalf("view %q: %v", view, err)
				}
				testutil.CheckProfile(t, "view "+view, p)
				if view != "" {
					continue
				}
				if pbuild.IsExact(p) == w.sampled {
					t.Errorf("default view exact=%v, want sampled=%v", pbuild.IsExact(p), w.sampled)
				}
				var n int64
				for _, s := range p.Sample {
					n += s.Value[0]
					if w.tids != "" && s.Label["tid"][0] != w.tids && !(rel == "chrome-trace/worker.json.gz") {
						t.Errorf("tid label %v, want %s", s.Label["tid"], w.tids)
					}
				}
				if w.samples != 0 && n != w.samples {
					t.Errorf("%d samples, want %d", n, w.samples)
				}
				if w.warn != "" {
					checkWarnings(t, p, []string{w.warn})
				}
			}
		})
	}
}

// TestWorkerProfiles: worker.json holds two profiles of one pid, on the
// main thread (0x9, tid 775) and a worker (0xa, tid 7443).
func TestWorkerProfiles(t *testing.T) {
	p, err := parseFile(t, filepath.Join(corpus, "chrome-trace", "worker.json.gz"), "")
	if err != nil {
		t.Fatal(err)
	}
	byProf := map[string]string{}
	for _, s := range p.Sample {
		byProf[s.Label["profile"][0]] = s.Label["tid"][0]
	}
	if len(byProf) != 2 || byProf["0x9"] != "775" || byProf["0xa"] != "7443" {
		t.Errorf("profiles → tids %v", byProf)
	}
}
