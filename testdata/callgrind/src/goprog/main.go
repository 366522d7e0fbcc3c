// Command goprog is the Go program behind hotbudget's callgrind test file
// go.callgrind.gz: a little work in a few functions, with recursion
// (main.walk) and a closure, short enough that callgrind's output stays
// small.
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

type node struct {
	left, right *node
	val         int
}

//go:noinline
func build(depth, seed int) *node {
	if depth == 0 {
		return nil
	}
	return &node{build(depth-1, seed*2), build(depth-1, seed*2+1), seed}
}

//go:noinline
func walk(n *node) int {
	if n == nil {
		return 0
	}
	return n.val + walk(n.left) + walk(n.right)
}

//go:noinline
func words(n int) []string {
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, strings.Repeat(string(rune('a'+i%26)), 1+i%7))
	}
	return out
}

//go:noinline
func sortWords(w []string) {
	sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
}

func main() {
	w := words(300)
	sortWords(w)
	t := build(8, 1)
	fmt.Fprintln(os.Stdout, len(w), w[0], walk(t))
}
