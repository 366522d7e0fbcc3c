package index

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/amplify"
	"github.com/hotbudget/hotbudget/internal/membudget"
)

// TestGzipTrailerNotTrusted: a gzip file's trailer, which says how large
// the content is (mod 2^32), is no measure of what to allocate: a 1 MiB
// file claiming 1 GiB made Decode allocate 1 GiB before it found the
// checksum wrong.
func TestGzipTrailerNotTrusted(t *testing.T) {
	var buf bytes.Buffer
	if err := amplify.GzipTrailer(&buf, 1<<20, 1<<30); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decode(buf.Bytes())
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("Decode: %v, want the gzip checksum error", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 32<<20 {
		t.Errorf("Decode allocated %d MiB for a %d KiB file", n>>20, buf.Len()>>10)
	}
}

// TestDecodeRefusesAmplification: the fast path refuses what the loaders
// refuse, from the first megabytes of the decompressed input: a string
// table of millions of one-byte strings, millions of empty locations.
func TestDecodeRefusesAmplification(t *testing.T) {
	for _, c := range []struct {
		name string
		gen  func(*bytes.Buffer) error
		want string
	}{
		{"strings", func(b *bytes.Buffer) error { return amplify.PprofStrings(b, 20_000_000) }, "strings"},
		{"locations", func(b *bytes.Buffer) error { return amplify.PprofLocations(b, 6_000_000) }, "locations"},
	} {
		var buf bytes.Buffer
		if err := c.gen(&buf); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Decode(buf.Bytes())
		runtime.ReadMemStats(&after)
		if !errors.Is(err, membudget.ErrTooLarge) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Decode: %v, want ErrTooLarge naming %s", c.name, err, c.want)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 256<<20 {
			t.Errorf("%s: Decode allocated %d MiB before refusing", c.name, n>>20)
		}
	}
}
