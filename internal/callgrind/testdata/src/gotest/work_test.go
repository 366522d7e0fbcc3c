package work

import (
	"strings"
	"testing"
)

func TestWorkload(t *testing.T) {
	text := strings.Repeat("delta alpha  gamma\tbeta epsilon ", 200)
	for range 20 {
		if Workload(text) != 5 {
			t.Fatal("want 5")
		}
	}
}
