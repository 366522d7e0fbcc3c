package loaders

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
)

// TestCallgrind loads every real callgrind file of testdata/callgrind
// (gzipped, detected from their content) and checks the detection of
// callgrind output and of what is not.
func TestCallgrind(t *testing.T) {
	paths, err := filepath.Glob("../testdata/callgrind/*.callgrind.gz")
	if err != nil || len(paths) < 6 {
		t.Fatalf("callgrind test files: %v %v", paths, err)
	}
	for _, path := range paths {
		if f, err := DetectFile(path); err != nil || f != FormatCallgrind {
			t.Errorf("%s: DetectFile = %q, %v", path, f, err)
		}
		p, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if sourceFormat(p) != FormatCallgrind || !isExact(p) || p.DefaultSampleType != "instructions" {
			t.Errorf("%s: format %q, exact %v, default type %q", path, sourceFormat(p), isExact(p), p.DefaultSampleType)
		}
		x, err := LoadIndex(path)
		if err != nil {
			t.Fatal(err)
		}
		tab, err := x.Table()
		if err != nil {
			t.Fatal(err)
		}
		if tab.Unit != analysis.UnitCount || tab.SampleType != "instructions/count" || tab.Total <= 0 {
			t.Errorf("%s: table %s in %s, total %d", path, tab.SampleType, tab.Unit, tab.Total)
		}
	}
	for _, c := range []struct {
		in   string
		want Format
	}{
		{"# callgrind format\nversion: 1\n", FormatCallgrind},
		{"version: 1\ncreator: callgrind-3.19.0\npid: 1\n", FormatCallgrind},
		{"\n# comment\ndesc: I1 cache:\ncmd: ./a\nevents: Ir\n", FormatCallgrind},
		{"creator: someone\nfn=a\n", FormatUnknown},
		{"main;events: 1\n", FormatFolded},
	} {
		if got := Detect([]byte(c.in)); got != c.want {
			t.Errorf("Detect(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Errors name the file, the format and the line.
	_, err = Read(strings.NewReader("# callgrind format\nevents: Ir\nfn=a\n1 x\n"), WithName("bad.out"))
	if err == nil || err.Error() != `bad.out: callgrind: line 4: cost "x" is not a count` {
		t.Errorf("error %v", err)
	}
	// Input over the limit is refused.
	var b bytes.Buffer
	b.WriteString("# callgrind format\nevents: Ir\n")
	for i := range 100000 {
		b.WriteString("fn=f")
		b.WriteString(strings.Repeat("x", i%3))
		b.WriteString(itoa(i))
		b.WriteString("\n1 1\n")
	}
	_, err = Read(bytes.NewReader(b.Bytes()), WithMaxBytes(int64(b.Len()/2)))
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("input over the limit: %v, want ErrTooLarge", err)
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
