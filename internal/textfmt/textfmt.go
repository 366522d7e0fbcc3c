// Package textfmt holds the one way hotbudget writes numbers and names for
// people: durations and shares as `go tool pprof -top` prints them, and
// text escaped for Markdown tables. Every report, failure text and table
// of the module uses it, so that one time reads the same everywhere.
package textfmt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration formats d as pprof does: in the largest unit (ns, us, ms, s,
// mins, hrs) in which it is at least 1, with two decimals and without a
// trailing ".00": 299.04ms, 1.5s, 620ms, 850us. Zero is "0".
func Duration(d time.Duration) string { return Nanos(float64(d)) }

// Nanos is Duration for a number of nanoseconds that need not be whole.
func Nanos(ns float64) string {
	if ns == 0 {
		return "0"
	}
	v := ns
	neg := v < 0
	if neg {
		v = -v
	}
	unit := "ns"
	switch {
	case v >= 3600e9:
		v, unit = v/3600e9, "hrs"
	case v >= 60e9:
		v, unit = v/60e9, "mins"
	case v >= 1e9:
		v, unit = v/1e9, "s"
	case v >= 1e6:
		v, unit = v/1e6, "ms"
	case v >= 1e3:
		v, unit = v/1e3, "us"
	}
	s := strings.TrimSuffix(fmt.Sprintf("%.2f", v), ".00")
	if neg {
		s = "-" + s
	}
	return s + unit
}

// Percent formats a share in [0,1] as pprof does: "12.34%".
func Percent(share float64) string { return fmt.Sprintf("%.2f%%", 100*share) }

// MarkdownEscape escapes text for a Markdown table cell: pipes, line
// breaks, HTML and the emphasis and code characters.
func MarkdownEscape(s string) string {
	return mdEscaper.Replace(s)
}

var mdEscaper = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ", "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "\\`")

// MarkdownCode puts s in a code span usable inside a table cell: a fence
// longer than any run of backticks in s.
func MarkdownCode(s string) string {
	s = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// Value formats v in unit ("ns", "bytes" or "count", the units of
// analysis.Table): a time as Nanos does, bytes in binary units with two
// decimals and without a trailing ".00" (512B, 1.50KiB, 2MiB), a count as
// a whole number (12345) or with two decimals when it is not whole (a
// mean per run or per op).
func Value(unit string, v float64) string {
	switch unit {
	case "bytes":
		return Bytes(v)
	case "count":
		return Count(v)
	}
	return Nanos(v)
}

// Bytes formats a number of bytes in binary units: 512B, 1.50KiB, 2MiB.
func Bytes(b float64) string {
	if b == 0 {
		return "0B"
	}
	v, neg := b, b < 0
	if neg {
		v = -v
	}
	unit := "B"
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	s := strings.TrimSuffix(fmt.Sprintf("%.2f", v), ".00")
	if neg {
		s = "-" + s
	}
	return s + unit
}

// Count formats a count: whole numbers as they are, others with two
// decimals.
func Count(c float64) string {
	if c == math.Trunc(c) && math.Abs(c) < 1<<53 {
		return strconv.FormatInt(int64(c), 10)
	}
	return strconv.FormatFloat(c, 'f', 2, 64)
}
