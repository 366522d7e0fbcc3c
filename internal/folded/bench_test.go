package folded

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
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

func BenchmarkParse(b *testing.B) { testutil.BenchParse(b, Parse, input(50000)) }

func BenchmarkWrite(b *testing.B) { testutil.BenchWrite(b, Parse, Write, input(50000)) }
