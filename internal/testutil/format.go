package testutil

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// ParseFunc reads one profile format: the signature of the internal
// loaders' Parse functions.
type ParseFunc func(io.Reader, pbuild.Options) (*profile.Profile, error)

// WriteFunc writes one profile format: the signature of the internal
// writers' Write functions.
type WriteFunc func(io.Writer, *profile.Profile) error

// ParseString reads s with parse; t fails, showing s, if parse does.
func ParseString(t testing.TB, parse ParseFunc, s string) *profile.Profile {
	t.Helper()
	p, err := parse(strings.NewReader(s), pbuild.Options{})
	if err != nil {
		t.Fatalf("Parse: %v\ninput:\n%s", err, s)
	}
	return p
}

// ParseFile reads the file at path with parse, under the name path; a path
// ending in .gz is gunzipped first (large corpus files are stored
// gzipped). t fails on any error.
func ParseFile(t testing.TB, parse ParseFunc, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	p, err := parse(r, pbuild.Options{Name: path})
	if err != nil {
		t.Fatalf("Parse(%s): %v", path, err)
	}
	return p
}

// ReadPprof reads the pprof profile (protobuf, gzipped or not) at path; t
// fails on any error.
func ReadPprof(t testing.TB, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("profile.Parse(%s): %v", path, err)
	}
	return p
}

// ParseValid is the start of a fuzz target for parse: it returns the
// profile parse makes of data, or false when parse rejects data. t fails
// if the profile it accepts is not valid.
func ParseValid(t testing.TB, parse ParseFunc, data []byte) (*profile.Profile, bool) {
	t.Helper()
	p, err := parse(bytes.NewReader(data), pbuild.Options{})
	if err != nil {
		return nil, false
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("invalid profile: %v", err)
	}
	return p, true
}

// Rewrite writes p with write and reads what it wrote back with parse. t
// fails if write does; the profile read back comes with the written bytes
// and parse's error, which the caller judges (a writer may write what its
// reader rightly refuses, such as no stacks at all).
func Rewrite(t testing.TB, parse ParseFunc, write WriteFunc, p *profile.Profile) (q *profile.Profile, out []byte, err error) {
	t.Helper()
	var buf bytes.Buffer
	if err := write(&buf, p); err != nil {
		t.Fatalf("Write: %v", err)
	}
	out = buf.Bytes()
	q, err = parse(bytes.NewReader(out), pbuild.Options{})
	return q, out, err
}

// BenchParse measures parse over in, in bytes per second and allocations.
func BenchParse(b *testing.B, parse ParseFunc, in []byte) {
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parse(bytes.NewReader(in), pbuild.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchWrite measures write over the profile parse makes of in (read once,
// outside the timing), in bytes written per second and allocations.
func BenchWrite(b *testing.B, parse ParseFunc, write WriteFunc, in []byte) {
	p, err := parse(bytes.NewReader(in), pbuild.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := write(&buf, p); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}

// Unique maps each element of es to what kv makes of it, failing t if two
// elements have the same key: the tests' tables of functions by name or
// by frame, where two rows under one key would hide one of them.
func Unique[E any, K comparable, V any](t testing.TB, es []E, kv func(E) (K, V)) map[K]V {
	t.Helper()
	m := make(map[K]V, len(es))
	for _, e := range es {
		k, v := kv(e)
		if _, dup := m[k]; dup {
			t.Fatalf("two rows under %v", k)
		}
		m[k] = v
	}
	return m
}
