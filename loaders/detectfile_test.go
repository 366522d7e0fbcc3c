package loaders_test

import (
	"testing"

	"github.com/hotbudget/hotbudget/loaders"
)

func TestDetectFile(t *testing.T) {
	for file, want := range map[string]loaders.Format{
		"../testdata/pprof/busy.pb.gz":           loaders.FormatPprof,
		"../testdata/cpuprofile/busy.cpuprofile": loaders.FormatCPUProfile,
		"../testdata/chrome/seed001-chunks.json": loaders.FormatChromeTrace,
		"../testdata/gotrace/cpu.trace":          loaders.FormatGoTrace,
	} {
		if got, err := loaders.DetectFile(file); err != nil || got != want {
			t.Errorf("DetectFile(%s) = %q, %v; want %q", file, got, err, want)
		}
	}
	if got, _ := loaders.DetectFile("../testdata/pprof/busy.pb.gz", loaders.WithFormat(loaders.FormatFolded)); got != loaders.FormatFolded {
		t.Errorf("WithFormat is not honoured: %q", got)
	}
	if _, err := loaders.DetectFile("../testdata/nothing-here"); err == nil {
		t.Error("missing file: no error")
	}
}
