package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/loaders"
)

// loadIndex (the fast path for pprof files) gives the tables and the errors
// of loaders.Load followed by Functions, on every file of testdata.
func TestLoadIndexEqualsLoad(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/*/*")
	pprofs := 0
	for _, f := range files {
		switch filepath.Ext(f) {
		case ".md", ".golden", ".yaml", ".go", ".js", "":
			continue
		}
		x, xerr := loadIndex(f)
		p, perr := loaders.Load(f)
		if fmt.Sprint(xerr) != fmt.Sprint(perr) {
			t.Errorf("%s: LoadIndex error %v, loaders.Load error %v", f, xerr, perr)
			continue
		}
		if perr != nil {
			continue
		}
		if format, _ := loaders.DetectFile(f); format == loaders.FormatPprof {
			pprofs++
		}
		got, gerr := x.Table(analysis.Selection{DropSynthetic: true})
		want, werr := analysis.Functions(p, analysis.Selection{DropSynthetic: true})
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: LoadIndex's table differs from Functions'", f)
		}
		if x.NumSamples() != len(p.Sample) {
			t.Errorf("%s: %d samples, want %d", f, x.NumSamples(), len(p.Sample))
		}
	}
	if pprofs < 10 {
		t.Errorf("only %d pprof files: the fast path is barely tested", pprofs)
	}
}

// The fast path keeps the loaders' limit on decompressed input: below
// ParseIndex's own bound, a pprof file over the limit is refused as every
// other format is.
func TestLoadIndexKeepsTheLimit(t *testing.T) {
	const f = "../../testdata/pprof/busy.pb.gz"
	t.Setenv(loaders.MaxBytesEnv, "1KiB")
	_, err := loadIndex(f)
	if !errors.Is(err, loaders.ErrTooLarge) {
		t.Errorf("%s=1KiB: %v, want the loaders' too-large error", loaders.MaxBytesEnv, err)
	}
	if _, err := loadIndex(f, loaders.WithMaxBytes(64<<20)); err != nil {
		t.Errorf("WithMaxBytes(64MiB) overrides the environment: %v", err)
	}
}
