package loaders_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/amplify"
	"github.com/hotbudget/hotbudget/loaders"
)

// LoadIndex (the fast path for pprof files) gives the tables and the
// errors of Load followed by analysis.Functions, on every file of
// testdata, and ReadIndex LoadIndex's.
func TestLoadIndexEqualsLoad(t *testing.T) {
	files, _ := filepath.Glob("../testdata/*/*")
	pprofs := 0
	for _, f := range files {
		switch filepath.Ext(f) {
		case ".md", ".golden", ".yaml", ".go", ".js", "":
			continue
		}
		x, xerr := loaders.LoadIndex(f)
		p, perr := loaders.Load(f)
		if fmt.Sprint(xerr) != fmt.Sprint(perr) {
			t.Errorf("%s: LoadIndex error %v, Load error %v", f, xerr, perr)
			continue
		}
		if data, err := os.ReadFile(f); err == nil {
			y, yerr := loaders.ReadIndex(bytes.NewReader(data), loaders.WithName(f))
			if fmt.Sprint(yerr) != fmt.Sprint(xerr) || (yerr == nil && !reflect.DeepEqual(y, x)) {
				t.Errorf("%s: ReadIndex gives %v, LoadIndex %v", f, yerr, xerr)
			}
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
	}
	if pprofs < 10 {
		t.Errorf("only %d pprof files: the fast path is barely tested", pprofs)
	}
}

// The fast path keeps the loaders' limit on decompressed input: a pprof
// file over the limit is refused as every other format is.
func TestLoadIndexKeepsTheLimit(t *testing.T) {
	const f = "../testdata/pprof/busy.pb.gz"
	t.Setenv("HOTBUDGET_MAX_BYTES", "1KiB")
	_, err := loaders.LoadIndex(f)
	if !errors.Is(err, loaders.ErrTooLarge) {
		t.Errorf("%s=1KiB: %v, want the loaders' too-large error", "HOTBUDGET_MAX_BYTES", err)
	}
	if _, err := loaders.LoadIndex(f, loaders.WithMaxBytes(64<<20)); err != nil {
		t.Errorf("WithMaxBytes(64MiB) overrides the environment: %v", err)
	}
}

// countReader counts the bytes read from r.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// A pprof file that ReadIndex refuses is read once, as far as Read reads
// it, and refused in Read's words: by the memory budget (millions of tiny
// strings), by the limit on input, and as no protobuf.
func TestReadIndexRefusesAsRead(t *testing.T) {
	var amplified bytes.Buffer
	if err := amplify.PprofStrings(&amplified, 20_000_000); err != nil {
		t.Fatal(err)
	}
	busy, err := os.ReadFile("../testdata/pprof/busy.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	// Past the 64 KiB detection looks at, a field of wire type 7.
	notProto := append(bytes.Repeat([]byte{0x32, 0x00}, 40_000), bytes.Repeat([]byte{0x07}, 100)...)
	for _, c := range []struct {
		name string
		data []byte
		opts []loaders.Option
		want string
	}{
		{"budget", amplified.Bytes(), nil, "strings"},
		{"limit", busy, []loaders.Option{loaders.WithMaxBytes(1 << 10)}, "more than 1 KiB (1024 bytes) after decompression"},
		{"no protobuf", notProto, nil, "not a pprof protobuf: at offset 80001: field number 0"},
	} {
		opts := append([]loaders.Option{loaders.WithName(c.name)}, c.opts...)
		r := &countReader{r: bytes.NewReader(c.data)}
		_, perr := loaders.Read(r, opts...)
		x := &countReader{r: bytes.NewReader(c.data)}
		_, xerr := loaders.ReadIndex(x, opts...)
		if perr == nil || !strings.Contains(perr.Error(), c.want) {
			t.Errorf("%s: Read: %v, want %q", c.name, perr, c.want)
		}
		if fmt.Sprint(xerr) != fmt.Sprint(perr) {
			t.Errorf("%s: ReadIndex: %v, Read: %v", c.name, xerr, perr)
		}
		if x.n != r.n || x.n > int64(len(c.data)) {
			t.Errorf("%s: ReadIndex read %d bytes, Read %d, of %d", c.name, x.n, r.n, len(c.data))
		}
	}
}
