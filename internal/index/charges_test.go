package index_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/amplify"
	"github.com/hotbudget/hotbudget/internal/index"
	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/synth"
)

// pprofInputs returns the decompressed pprof protobufs of testdata and a
// synthetic profile with labels.
func pprofInputs(t *testing.T) (names []string, inputs [][]byte) {
	files, _ := filepath.Glob("../../testdata/*/*")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(b) < 2 {
			continue
		}
		if b[0] == 0x1f && b[1] == 0x8b {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				continue
			}
			if b, err = io.ReadAll(zr); err != nil {
				continue
			}
		}
		if !index.LooksLikeProfile(b[:min(len(b), 4096)]) {
			continue
		}
		if _, err := profile.ParseData(b); err != nil {
			continue
		}
		names, inputs = append(names, f), append(inputs, b)
	}
	if len(inputs) < 10 {
		t.Fatalf("only %d pprof files in testdata", len(inputs))
	}
	var buf bytes.Buffer
	if err := synth.Profile(synth.Spec{Functions: 5000, Stacks: 20000, MinDepth: 8, MaxDepth: 24, Seed: 3, Labels: true}).WriteUncompressed(&buf); err != nil {
		t.Fatal(err)
	}
	return append(names, "synth with labels"), append(inputs, buf.Bytes())
}

// TestReaderCounts: what the Reader charges, read a byte at a time or all
// at once, is what pprof's parser finds.
func TestReaderCounts(t *testing.T) {
	names, inputs := pprofInputs(t)
	for i, b := range inputs {
		p, _ := profile.ParseData(b)
		want := map[membudget.Kind]int64{}
		want[membudget.Sample] = int64(len(p.Sample))
		want[membudget.Location] = int64(len(p.Location))
		want[membudget.Function] = int64(len(p.Function))
		want[membudget.Mapping] = int64(len(p.Mapping))
		for _, s := range p.Sample {
			want[membudget.LocationID] += int64(len(s.Location))
			want[membudget.Value] += int64(len(s.Value))
			for _, v := range s.Label {
				want[membudget.Label] += int64(len(v))
			}
			for _, v := range s.NumLabel {
				want[membudget.Label] += int64(len(v))
			}
		}
		for _, l := range p.Location {
			want[membudget.Line] += int64(len(l.Line))
		}
		for step, r := range []io.Reader{bytes.NewReader(b), iotest.OneByteReader(bytes.NewReader(b))} {
			m := &membudget.Meter{}
			if _, _, err := (index.Reader{Meter: m}).Read(r); err != nil {
				t.Errorf("%s: %v", names[i], err)
				continue
			}
			for _, k := range []membudget.Kind{membudget.Sample, membudget.Location, membudget.Function, membudget.Mapping, membudget.LocationID, membudget.Value, membudget.Label, membudget.Line} {
				if m.Count(k) != want[k] {
					t.Errorf("%s (feed %d): %d of kind %d, pprof finds %d", names[i], step, m.Count(k), k, want[k])
				}
			}
			if _, in := m.Total(); in != int64(len(b)) {
				t.Errorf("%s: input %d, want %d", names[i], in, len(b))
			}
		}
	}
}

// TestChargesFollowAllocation: on ordinary profiles the charges are close
// to what pprof's parser allocates (neither far under, which would let
// amplification through, nor far over, which would refuse real profiles)
// and well under membudget.Ratio per byte of input.
func TestChargesFollowAllocation(t *testing.T) {
	names, inputs := pprofInputs(t)
	for i, b := range inputs {
		m := &membudget.Meter{}
		if _, _, err := (index.Reader{Meter: m}).Read(bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		charged, in := m.Total()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		p, err := profile.ParseData(b)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(p)
		alloc := int64(after.TotalAlloc - before.TotalAlloc)
		if r := float64(charged) / float64(alloc); r < 0.5 || r > 1.5 {
			t.Errorf("%s: charged %d bytes, pprof allocated %d (%.2f times)", names[i], charged, alloc, r)
		}
		if r := float64(charged) / float64(in); r > membudget.Ratio*2/3 {
			t.Errorf("%s: charged %.1f bytes per byte of input, too close to membudget.Ratio %d", names[i], r, membudget.Ratio)
		}
	}
}

// TestAmplificationRefused: profiles of tiny elements are refused by the
// membudget.Ratio or by Max, early, naming the kind; an ordinary one is not.
func TestAmplificationRefused(t *testing.T) {
	raw := func(gen func(w io.Writer) error) []byte {
		var gz bytes.Buffer
		if err := gen(&gz); err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(&gz)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name   string
		in     []byte
		max    int64
		want   string
		within int64 // refused within this much input
	}{
		// 104 bytes per location of 4 to 6 bytes: refused by Max only.
		{"locations", raw(func(w io.Writer) error { return amplify.PprofLocations(w, 2_000_000) }), 64 << 20, "locations", 4 << 20},
		// 32 bytes per string of 3 bytes.
		{"strings", raw(func(w io.Writer) error { return amplify.PprofStrings(w, 3_000_000) }), 64 << 20, "strings", 8 << 20},
	} {
		m := &membudget.Meter{Max: c.max}
		_, _, err := (index.Reader{Meter: m}).Read(&chunkReader{c.in, 4096})
		_, in := m.Total()
		if !errors.Is(err, membudget.ErrTooLarge) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want membudget.ErrTooLarge naming %s", c.name, err, c.want)
		}
		if in > c.within {
			t.Errorf("%s: refused after %d bytes, want within %d", c.name, in, c.within)
		}
	}
	// Empty locations, 2 bytes each, are refused by the membudget.Ratio alone.
	var b []byte
	for range 2_000_000 {
		b = append(b, 4<<3|2, 0)
	}
	m := &membudget.Meter{}
	_, _, err := (index.Reader{Meter: m}).Read(bytes.NewReader(b))
	if !errors.Is(err, membudget.ErrTooLarge) || !strings.Contains(err.Error(), "times") {
		t.Errorf("empty locations: %v, want the Ratio's ErrTooLarge", err)
	}
	// The header alone passes any budget.
	if _, _, err := (index.Reader{Meter: &membudget.Meter{Max: membudget.Allowance}}).Read(bytes.NewReader(amplify.Header())); err != nil {
		t.Errorf("header: %v", err)
	}
}

// chunkReader returns b at most n bytes a read.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}
