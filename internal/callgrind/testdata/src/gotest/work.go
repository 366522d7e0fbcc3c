package work

import (
	"sort"
	"strings"
)

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
