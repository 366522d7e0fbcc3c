package speedscope

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
)

// sampledInput builds a sampled file with n samples of depth 20 over 500 frames.
func sampledInput(n int) []byte {
	var b strings.Builder
	b.WriteString(head + `"shared":{"frames":[`)
	for i := range 500 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"pkg.Func%d","file":"pkg/file%d.go","line":%d}`, i, i%40, i+1)
	}
	b.WriteString(`]},"profiles":[{"type":"sampled","name":"main","unit":"microseconds","startValue":0,"endValue":1,"samples":[`)
	x := uint32(1)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		for d := range 20 {
			x = x*1664525 + 1013904223
			if d > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%d", (x>>8)%500)
		}
		b.WriteByte(']')
	}
	b.WriteString(`],"weights":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d", 100+i%7)
	}
	b.WriteString("]}]}")
	return []byte(b.String())
}

// eventedInput builds an evented file with n open/close pairs nested 10 deep.
func eventedInput(n int) []byte {
	var b strings.Builder
	b.WriteString(head + `"shared":{"frames":[`)
	for i := range 10 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"f%d"}`, i)
	}
	b.WriteString(`]},"profiles":[{"type":"evented","name":"main","unit":"nanoseconds","startValue":0,"endValue":0,"events":[`)
	at := 0
	for i := 0; i < n/10; i++ {
		for d := range 10 {
			if i > 0 || d > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"type":"O","frame":%d,"at":%d}`, d, at)
			at += 3
		}
		for d := 9; d >= 0; d-- {
			fmt.Fprintf(&b, `,{"type":"C","frame":%d,"at":%d}`, d, at)
			at += 5
		}
	}
	b.WriteString("]}]}")
	return []byte(b.String())
}

func BenchmarkParseSampled(b *testing.B) { testutil.BenchParse(b, Parse, sampledInput(50000)) }
func BenchmarkParseEvented(b *testing.B) { testutil.BenchParse(b, Parse, eventedInput(100000)) }

func BenchmarkWrite(b *testing.B) { testutil.BenchWrite(b, Parse, Write, sampledInput(50000)) }
