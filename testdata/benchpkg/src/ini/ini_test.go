package ini

import (
	"strings"
	"testing"
)

var input = strings.Repeat("Name = Value\nOther_Key = Something Longer\n", 200)

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		Parse(input)
	}
}
