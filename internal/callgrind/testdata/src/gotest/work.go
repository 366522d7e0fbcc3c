// Package work is the workload of internal/callgrind's TestGoTotals: a Go
// test binary whose whole run callgrind records (the runtime's start, stack
// growth, goroutine switches).
package work

import (
	"sort"
	"strings"
)

// Workload splits text into words, sorts them and counts the distinct ones.
//
//go:noinline
func Workload(text string) int {
	w := strings.Fields(text)
	sort.Strings(w)
	m := map[string]int{}
	for _, s := range w {
		m[s]++
	}
	return len(m)
}
