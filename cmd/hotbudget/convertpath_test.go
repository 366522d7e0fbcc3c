package main

import (
	"testing"

	"github.com/hotbudget/hotbudget/loaders"
)

func TestFormatFromPath(t *testing.T) {
	for in, want := range map[string]loaders.Format{
		"a.pb.gz": loaders.FormatPprof, "x/y.prof": loaders.FormatPprof, "a.speedscope.json": loaders.FormatSpeedscope,
		"a.folded": loaders.FormatFolded, "a.collapsed": loaders.FormatFolded,
	} {
		if got, err := formatFromPath(in); got != want || err != nil {
			t.Errorf("formatFromPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := formatFromPath("a.cpuprofile"); err == nil {
		t.Error("cpuprofile output should be refused")
	}
}
