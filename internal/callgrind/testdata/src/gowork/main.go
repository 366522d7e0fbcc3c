// Command gowork is the Go program behind internal/callgrind's real dumps
// gowork.callgrind.gz and gowork-instr.callgrind.gz (see ../../README.md):
// callgrind records the whole program (no --toggle-collect), so the dumps
// hold the runtime's start, stack growth (morestack), goroutine switches
// and the collector, where a function's calls are entered mid-body and
// stacks are switched.
package main

import (
	"fmt"
	"os"
	"strings"
)

//go:noinline
func fields(text string, rounds int) int {
	n := 0
	for range rounds {
		n += len(strings.Fields(text))
	}
	return n
}

// deep recurses with a large frame so that its goroutine's stack grows.
//
//go:noinline
func deep(n int) int {
	var buf [256]byte
	buf[n%256] = byte(n)
	if n == 0 {
		return int(buf[0])
	}
	return deep(n-1) + int(buf[n%256])
}

//go:noinline
func count(words []string) map[string]int {
	m := make(map[string]int)
	for _, w := range words {
		m[w]++
	}
	return m
}

func main() {
	text := strings.Repeat("alpha beta  gamma\tdelta epsilon ", 40)
	ch := make(chan int)
	go func() {
		ch <- deep(200)
	}()
	n := fields(text, 50)
	m := count(strings.Fields(text))
	fmt.Fprintln(os.Stdout, n, len(m), <-ch)
}
