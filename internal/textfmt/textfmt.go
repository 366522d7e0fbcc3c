// Package textfmt holds the one way hotbudget writes numbers and names for
// people: durations and shares as `go tool pprof -top` prints them, and
// untrusted text (names, labels and comments from profiles) escaped for
// each kind of output: a terminal or CI log (Term, Name, Line, Guard) and
// GitHub Markdown (MarkdownCode, MarkdownEscape, HTML, LimitMarkdown).
// Every report, failure text and table of the module uses it, so that one
// time reads the same everywhere and no name is written unescaped.
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

// MarkdownEscape escapes a line of prose that may quote untrusted text
// for Markdown (a table cell, a quote, a list item): Line first (controls
// and line breaks visible, at most MaxLine characters), then every
// character GitHub Flavored Markdown gives a meaning inside a line is
// escaped, so the text renders as itself: pipes, backslashes, HTML and
// entities, emphasis, code, links and images ([ ]), strikethrough; a
// leading #, +, -, = or "1." cannot start a block; bare URLs ("://",
// "www.") and e-mail addresses are not linked; and "@name" is written
// "@\u2060name" (a word joiner after the @), which GitHub does not take
// for a mention.
func MarkdownEscape(s string) string {
	s = Line(s)
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '*', '_', '`', '[', ']', '~', '|', '&':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '@':
			b.WriteByte('@')
			if i+1 < len(s) && isWordByte(s[i+1]) {
				b.WriteString("\u2060")
			}
		case ':':
			if strings.HasPrefix(s[i:], "://") {
				b.WriteByte('\\')
			}
			b.WriteByte(':')
		case '.':
			if i >= 3 && strings.EqualFold(s[i-3:i], "www") {
				b.WriteByte('\\')
			}
			b.WriteByte('.')
		default:
			b.WriteByte(c)
		}
	}
	return blockStart(b.String())
}

// blockStart escapes what would start a block at the beginning of a line:
// a heading (#), a list (-, +, "1." or "1)"), a setext underline (=), an
// indented code block.
//
// Leading spaces (an indented code block) start with "&#32;" instead.
func blockStart(s string) string {
	if strings.HasPrefix(s, " ") {
		return "&#32;" + s[1:]
	}
	if s == "" {
		return s
	}
	switch s[0] {
	case '#', '+', '-', '=':
		return "\\" + s
	}
	d := 0
	for d < len(s) && d < 10 && s[d] >= '0' && s[d] <= '9' {
		d++
	}
	if d > 0 && d < len(s) && (s[d] == '.' || s[d] == ')') {
		return s[:d] + "\\" + s[d:]
	}
	return s
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

// MarkdownCode puts an untrusted name in a code span usable inside a
// table cell: Name first (at most MaxName characters, controls and line
// breaks visible), pipes escaped for the table, and a fence longer than
// any run of backticks in it, padded with a space when it starts or ends
// with a backtick. Nothing in a code span is a link, mention, HTML or
// emphasis.
func MarkdownCode(s string) string {
	s = strings.ReplaceAll(Name(s), "|", `\|`)
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

// Plural is n with the noun one or many after it: "1 benchmark", "3
// benchmarks".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// List joins the first n items with commas and says how many more there
// are: "a, b, c and 2 more".
func List(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}
