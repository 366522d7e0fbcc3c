// Package capture is the code under test in hotbudget's first example: a
// small key=value parser with a known hot path. Its tests capture a CPU
// profile of Parse and bound the time spent in its functions; the example
// GitHub workflow profiles its benchmark on both sides of a pull request.
package capture

import (
	"strconv"
	"strings"
)

// Record is one parsed line.
type Record struct {
	Key   string
	Value int
}

// Parse parses lines of the form "key=value" and skips the others.
func Parse(input string) []Record {
	var out []Record
	for _, line := range strings.Split(input, "\n") {
		if r, ok := parseLine(line); ok {
			out = append(out, r)
		}
	}
	return out
}

//go:noinline
func parseLine(line string) (Record, bool) {
	k, v, ok := strings.Cut(line, "=")
	if !ok {
		return Record{}, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return Record{}, false
	}
	return Record{Key: normalizeKey(k), Value: n}, true
}

// normalizeKey lower-cases and trims a key, one byte at a time: the hot path
// the example's budget watches.
//
//go:noinline
func normalizeKey(k string) string {
	var b strings.Builder
	b.Grow(len(k))
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c == ' ' || c == '\t' {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Input returns n lines of sample input.
func Input(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(" Some-Key-")
		b.WriteString(strconv.Itoa(i % 97))
		b.WriteString(" = ")
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}
