// Package amplify writes hostile profiles that are small on disk and large
// in memory: the inputs that the loaders' memory budget must refuse or
// read within bounds. Tests and benchmarks generate them; no such file is
// committed.
package amplify

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
)

// appendVarint appends v as a protobuf varint.
func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendBytes appends field num with wire type 2 holding data.
func appendBytes(b []byte, num int, data []byte) []byte {
	b = appendVarint(b, uint64(num)<<3|2)
	b = appendVarint(b, uint64(len(data)))
	return append(b, data...)
}

// appendUint appends field num with wire type 0 holding v.
func appendUint(b []byte, num int, v uint64) []byte {
	b = appendVarint(b, uint64(num)<<3)
	return appendVarint(b, v)
}

// header is a valid pprof Profile message with sample type
// cpu/nanoseconds, period type cpu/nanoseconds and one sample of 10ms in
// one location in function "main.f": string_table "", "samples",
// "count", "cpu", "nanoseconds", "main.f".
func header() []byte {
	var b []byte
	vt := func(t, u uint64) []byte { return appendUint(appendUint(nil, 1, t), 2, u) }
	b = appendBytes(b, 1, vt(3, 4))                                                     // sample_type
	b = appendBytes(b, 2, appendUint(appendUint(nil, 1, 1), 2, 10_000_000))             // sample: location 1, 10ms
	b = appendBytes(b, 4, appendBytes(appendUint(nil, 1, 1), 4, appendUint(nil, 1, 1))) // location 1: line of function 1
	b = appendBytes(b, 5, appendUint(appendUint(nil, 1, 1), 2, 5))                      // function 1 named "main.f"
	for _, s := range []string{"", "samples", "count", "cpu", "nanoseconds", "main.f"} {
		b = appendBytes(b, 6, []byte(s))
	}
	b = appendBytes(b, 11, vt(3, 4)) // period_type
	b = appendUint(b, 12, 10_000_000)
	return b
}

// Header returns a small valid pprof profile (uncompressed): one sample
// of 10ms in main.f.
func Header() []byte { return header() }

// PprofStrings writes a valid pprof profile, gzipped, whose string table
// holds n one-byte strings besides the few it uses: 3n bytes once
// decompressed, a thousandth of that on disk.
func PprofStrings(w io.Writer, n int) error {
	zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	bw := bufio.NewWriterSize(zw, 1<<16)
	bw.Write(header())
	one := appendBytes(nil, 6, []byte("x"))
	chunk := bytes.Repeat(one, 4096)
	for n > 0 {
		k := min(n, 4096)
		bw.Write(chunk[:k*len(one)])
		n -= k
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return zw.Close()
}

// PprofLocations writes a valid pprof profile, gzipped, with n empty
// locations (ids 2 to n+1, no lines) besides the one its sample uses.
func PprofLocations(w io.Writer, n int) error {
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	bw := bufio.NewWriterSize(zw, 1<<16)
	bw.Write(header())
	var loc []byte
	for id := 2; id < n+2; id++ {
		loc = appendBytes(loc[:0], 4, appendUint(nil, 1, uint64(id)))
		bw.Write(loc)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return zw.Close()
}

// SparsePprof writes a pprof profile, uncompressed, of size bytes to
// path: a valid profile followed by an unknown field that holds the rest,
// zeros in a hole of the file that take no disk.
func SparsePprof(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	b := header()
	b = appendVarint(b, 100<<3|2)
	rest := size - int64(len(b))
	b = appendVarint(b, uint64(rest-int64(len(appendVarint(nil, uint64(rest))))))
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// GzipTrailer writes a gzipped pprof profile whose body is padded with
// pad incompressible bytes in an unknown field, and whose trailer claims
// the decompressed size is claim bytes (the checksum stays right, so the
// file is refused only for the size).
func GzipTrailer(w io.Writer, pad int, claim uint32) error {
	body := header()
	junk := make([]byte, pad)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range junk {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		junk[i] = byte(x)
	}
	body = appendBytes(body, 100, junk)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(body)
	if err := zw.Close(); err != nil {
		return err
	}
	b := buf.Bytes()
	binary.LittleEndian.PutUint32(b[len(b)-4:], claim)
	_, err := w.Write(b)
	return err
}

// V8Shape says how the nodes of a V8 profile link.
type V8Shape int

// Shapes of V8Nodes.
const (
	V8Flat  V8Shape = iota // every node a child of the root, each sampled once
	V8Chain                // each node the child of the one before, the deepest sampled
)

// V8Nodes writes a V8 .cpuprofile (uncompressed JSON) with n nodes after
// the root, each its own function, and samples as shape says.
func V8Nodes(w io.Writer, n int, shape V8Shape) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	node := func(id int, children []byte) {
		fmt.Fprintf(bw, `{"id":%d,"callFrame":{"functionName":"f%d"},"children":[%s]}`, id, id, children)
	}
	bw.WriteString(`{"nodes":[`)
	// The root (id 1).
	var kids []byte
	if shape == V8Flat {
		bw.WriteString(`{"id":1,"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"children":[`)
		for id := 2; id < n+2; id++ {
			if id > 2 {
				bw.WriteByte(',')
			}
			bw.WriteString(strconv.Itoa(id))
		}
		bw.WriteString(`]}`)
		for id := 2; id < n+2; id++ {
			bw.WriteByte(',')
			node(id, nil)
		}
	} else {
		bw.WriteString(`{"id":1,"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"children":[2]}`)
		for id := 2; id < n+2; id++ {
			bw.WriteByte(',')
			kids = kids[:0]
			if id < n+1 {
				kids = strconv.AppendInt(kids, int64(id+1), 10)
			}
			node(id, kids)
		}
	}
	bw.WriteString(`],"startTime":0,"endTime":`)
	samples := n
	if shape == V8Chain {
		samples = 1
	}
	bw.WriteString(strconv.Itoa(1000 * samples))
	bw.WriteString(`,"samples":[`)
	for i := range samples {
		if i > 0 {
			bw.WriteByte(',')
		}
		id := i + 2
		if shape == V8Chain {
			id = n + 1
		}
		bw.WriteString(strconv.Itoa(id))
	}
	bw.WriteString(`],"timeDeltas":[`)
	for i := range samples {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("1000")
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}
