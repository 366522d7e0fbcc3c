package textfmt

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Untrusted text. Every function name, file name, label, thread name,
// comment, benchmark name and configuration value in a profile comes from
// the code that was profiled, which in CI is a pull request anyone may
// write. Such text reaches three kinds of output, and each has one
// function here that every writer uses for it:
//
//   - a terminal or a CI log (text reports, errors, warnings, perfassert
//     failures): Term, or Name for a name, whose length is also bounded;
//   - GitHub Markdown (PR comments, job summaries): MarkdownCode for a
//     name, MarkdownEscape for a line of prose quoting untrusted text;
//   - both at once, whatever the writer forgot: Guard, which the command
//     line tool puts between every writer and its stdout and stderr.
//
// Term leaves ordinary printable text as it is, so that reports of
// ordinary profiles do not change.

// MaxName is how many characters of a name the reports show; Shorten
// says which.
const MaxName = 240

// MaxLine bounds a line of untrusted prose (a warning quoting a name).
const MaxLine = 2000

// Shorten returns s when it has at most max characters, else its first
// max/4 characters, "…" and its last characters, max in all: the start of
// a function name says its package, the end says the function, and the
// middle (a long import path or type parameters) is what goes.
func Shorten(s string, max int) string {
	if len(s) <= max || utf8.RuneCountInString(s) <= max {
		return s
	}
	if max < 5 {
		max = 5
	}
	head := max / 4
	tail := max - head - 1
	i, n := 0, 0
	for n < head {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	j, m := len(s), 0
	for m < tail {
		_, size := utf8.DecodeLastRuneInString(s[:j])
		j -= size
		m++
	}
	return s[:i] + "…" + s[j:]
}

// Name is a name from a profile as a terminal or log shows it: Shorten to
// MaxName characters, then Term.
func Name(s string) string { return Term(Shorten(s, MaxName)) }

// Line is a line of prose that quotes untrusted text (a loader warning,
// an error), as a terminal or log shows it: Shorten to MaxLine, then Term.
func Line(s string) string { return Term(Shorten(s, MaxLine)) }

// Lines is Line for each line of a message of several lines (an error
// joining several), keeping its line breaks; the whole is first shortened
// to 4*MaxLine characters.
func Lines(s string) string {
	if !strings.Contains(s, "\n") {
		return Line(s)
	}
	ls := strings.Split(Shorten(s, 4*MaxLine), "\n")
	for i, l := range ls {
		ls[i] = Line(l)
	}
	return strings.Join(ls, "\n")
}

// Term makes untrusted text safe to print on one line of a terminal or a
// CI log, keeping it readable: control characters (C0, DEL, C1), line and
// paragraph separators (U+0085, U+2028, U+2029), bidirectional overrides
// and invalid UTF-8 are written as visible escapes (\n, \r, \t, \x1b,
// \u202e; \xff for a byte that is not UTF-8), so no terminal escape, line
// break or NUL passes. It also defuses GitHub Actions workflow commands:
// "##[" anywhere becomes "##\u005b", and text that starts with "::" after
// white space has its first colon written "\x3a". Text without any of
// these is returned unchanged.
func Term(s string) string { return escape(s, false) }

// needsEscape reports whether escape would change s.
func needsEscape(s string, keepTab bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && !(keepTab && c == '\t') || c >= 0x7f {
			return true
		}
	}
	return strings.Contains(s, "##[") || startsCommand(s)
}

// startsCommand reports whether s, after white space as the Actions
// runner trims it (.NET's Char.IsWhiteSpace, which unicode.IsSpace
// matches), begins with "::".
func startsCommand(s string) bool {
	return strings.HasPrefix(strings.TrimLeftFunc(s, unicode.IsSpace), "::")
}

// escape is Term; keepTab leaves tabs alone (the tool's own text uses
// them; Guard keeps them).
func escape(s string, keepTab bool) string {
	if !needsEscape(s, keepTab) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	lead := true // only white space so far
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
			i++
			lead = false
			continue
		}
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t' && !keepTab:
			b.WriteString(`\t`)
		case r == '\t':
			b.WriteByte('\t')
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		case r == ':' && lead && strings.HasPrefix(s[i:], "::"):
			b.WriteString(`\x3a`)
		case r == '[' && strings.HasSuffix(s[:i], "##"):
			b.WriteString(`\u005b`)
		default:
			b.WriteString(s[i : i+size])
		}
		if lead && !unicode.IsSpace(r) {
			lead = false
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports the runes Term escapes beyond ASCII controls: C1
// controls (U+0085 is a line break, U+009B a CSI to some terminals), the
// line and paragraph separators, bidirectional embeddings, overrides and
// isolates, which reorder what a reader sees (CVE-2021-42574), byte order
// marks, and any rune that is not a valid character.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f,
		r == 0x2028, r == 0x2029,
		r >= 0x202a && r <= 0x202e,
		r >= 0x2066 && r <= 0x2069,
		r == 0x200e, r == 0x200f, r == 0x061c,
		r == 0xfeff,
		r == utf8.RuneError:
		return true
	}
	return !utf8.ValidRune(r)
}

// Guard passes what is written to it on to another writer a line at a
// time, each line escaped as Term escapes text but keeping tabs and the
// line's own newline: no raw control character, no line that starts with
// "::" after white space, no "##[" reaches the writer, whatever wrote the
// text. The command line tool writes all its output through a Guard per
// stream; only Command writes a workflow command of its own. Text of the
// tool's own never needs escaping, so a Guard changes nothing in reports
// of ordinary profiles; JSON (whose strings escape every control
// character) stays valid, as "\u005b" and "\u0085" are JSON escapes too.
//
// A line is held until its newline or Flush.
type Guard struct {
	w   io.Writer
	buf []byte
}

// NewGuard returns a Guard writing to w.
func NewGuard(w io.Writer) *Guard { return &Guard{w: w} }

// Write escapes and writes every complete line of p and holds the rest.
func (g *Guard) Write(p []byte) (int, error) {
	g.buf = append(g.buf, p...)
	start := 0
	var out []byte
	for {
		i := bytes.IndexByte(g.buf[start:], '\n')
		if i < 0 {
			break
		}
		out = append(out, escape(string(g.buf[start:start+i]), true)...)
		out = append(out, '\n')
		start += i + 1
	}
	g.buf = append(g.buf[:0], g.buf[start:]...)
	if len(out) > 0 {
		if _, err := g.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes the line held, escaped, without a newline.
func (g *Guard) Flush() error {
	if len(g.buf) == 0 {
		return nil
	}
	s := escape(string(g.buf), true)
	g.buf = g.buf[:0]
	_, err := io.WriteString(g.w, s)
	return err
}

// Command writes one workflow command line of the tool's own (an ::error
// annotation) unescaped, on a line of its own: a line held is written
// first, ended. Its text must come from the tool or be escaped for a
// workflow command (percent-encoded); line breaks in it are refused.
func (g *Guard) Command(line string) error {
	line = strings.TrimRight(line, "\r\n")
	if strings.ContainsAny(line, "\r\n") {
		return fmt.Errorf("workflow command with a line break: %q", line)
	}
	if len(g.buf) > 0 {
		if err := g.Flush(); err != nil {
			return err
		}
		if _, err := io.WriteString(g.w, "\n"); err != nil {
			return err
		}
	}
	_, err := io.WriteString(g.w, line+"\n")
	return err
}

// MaxMarkdown bounds a Markdown report: GitHub refuses a pull-request
// comment longer than 65,536 characters, and a report is often posted as
// one. Bytes bound characters.
const MaxMarkdown = 60000

// LimitMarkdown returns a Markdown report s of at most max bytes: when s
// is longer it is cut at the end of the last line that fits, a
// <details> element left open is closed, and a last paragraph says how
// many lines and bytes were left out.
func LimitMarkdown(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const reserve = 300
	cut := max - reserve
	if cut < 0 {
		cut = 0
	}
	i := strings.LastIndexByte(s[:cut], '\n')
	if i < 0 {
		i = 0
	}
	kept := s[:i]
	var b strings.Builder
	b.WriteString(kept)
	b.WriteString("\n")
	open := strings.Count(kept, "<details>") - strings.Count(kept, "</details>")
	for ; open > 0; open-- {
		b.WriteString("\n</details>\n")
	}
	left := s[i:]
	fmt.Fprintf(&b, "\n**Report cut to fit a comment:** %d more lines (%d bytes) left out; the text and JSON reports have everything.\n",
		strings.Count(strings.TrimRight(left, "\n"), "\n"), len(left))
	return b.String()
}

// HTML escapes a line of prose that may quote untrusted text for an HTML
// element inside Markdown (a <summary>): Line first (so no line break ends
// the HTML block), then HTML-escaped, with "@name" written
// "@&#8288;name" (a word joiner after the @), which GitHub does not take
// for a mention.
func HTML(s string) string {
	s = html.EscapeString(Line(s))
	if !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if s[i] == '@' && i+1 < len(s) && isWordByte(s[i+1]) {
			b.WriteString("&#8288;")
		}
	}
	return b.String()
}
