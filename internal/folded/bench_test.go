package folded

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// input builds n lines of depth 20 over 500 function names.
func input(n int) []byte {
	var b strings.Builder
	x := uint32(1)
	for i := range n {
		for d := range 20 {
			x = x*1664525 + 1013904223
			if d > 0 {
				b.WriteByte(';')
			}
			fmt.Fprintf(&b, "pkg.(*Type).Method%d", (x>>8)%500)
		}
		fmt.Fprintf(&b, " %d\n", 1+i%9)
	}
	return []byte(b.String())
}

func BenchmarkParse(b *testing.B) {
	in := input(50000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(in), pbuild.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	p, err := Parse(bytes.NewReader(input(50000)), pbuild.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := Write(&buf, p); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}
