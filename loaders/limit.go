package loaders

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/hotbudget/hotbudget/internal/membudget"
)

// defaultMaxBytes is how much input, after decompression, Read takes in
// unless HOTBUDGET_MAX_BYTES or WithMaxBytes says otherwise: 1 GiB.
const defaultMaxBytes = membudget.DefaultInput

// maxBytesEnv names the environment variable that sets the default limit
// on decompressed input: a number of bytes, optionally with a suffix KiB,
// MiB, GiB or TiB, or 0 for no limit.
const maxBytesEnv = membudget.InputEnv

// ErrTooLarge is wrapped by the error for input larger than the limit,
// and for input whose parsed form would take more memory than the limit,
// or more than a small multiple of the input (see Memory in the package
// documentation).
var ErrTooLarge = membudget.ErrTooLarge

// maxBytes returns the limit on decompressed input that Read applies with
// opts: WithMaxBytes, else HOTBUDGET_MAX_BYTES, else 1 GiB;
// math.MaxInt64 when there is none. The error names a malformed
// HOTBUDGET_MAX_BYTES.
func maxBytes(opts ...Option) (int64, error) {
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	return c.limit()
}

// limit returns the limit on decompressed input; math.MaxInt64 for none.
func (c *config) limit() (int64, error) { return membudget.InputLimit(c.maxBytes) }

// parseSize reads "1073741824", "512MiB" or "2GiB".
func parseSize(s string) (int64, error) { return membudget.ParseSize(s) }

// sizeString writes n bytes for people: "1 GiB (1073741824 bytes)".
func sizeString(n int64) string { return membudget.SizeString(n) }

// limitReader passes on at most limit bytes of r and then fails with the
// ErrTooLarge error if r has more; over records that it did.
type limitReader struct {
	r     io.Reader
	left  int64
	limit int64
	over  bool
	meter *membudget.Meter // when not nil, fed what is read; its error stops the read
}

func (l *limitReader) err() error {
	return fmt.Errorf("%w: more than %s after decompression; raise the limit with %s or loaders.WithMaxBytes",
		ErrTooLarge, sizeString(l.limit), maxBytesEnv)
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.over {
		return 0, l.err()
	}
	if l.left < math.MaxInt64 && int64(len(p)) > l.left+1 {
		p = p[:l.left+1] // one byte more than allowed tells that there is more
	}
	n, err := l.r.Read(p)
	if int64(n) > l.left {
		n = int(l.left)
		l.left = 0
		l.over = true
		return n, l.err()
	}
	l.left -= int64(n)
	if l.meter != nil {
		if merr := l.meter.Read(n); merr != nil {
			return n, merr
		}
	}
	return n, err
}

// describe says what head, the first bytes of input that Detect did not
// recognise, holds.
func describe(head []byte) string {
	b := bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimLeft(b, " \t\r\n")) == 0 {
		if len(head) >= peekSize {
			return "only whitespace in the first 64 KiB: not a profile"
		}
		return fmt.Sprintf("only whitespace (%d bytes): not a profile", len(head))
	}
	const hint = " (not pprof, V8 .cpuprofile, Chrome trace, speedscope, folded stacks or a Go trace)"
	if text := leadingText(b, 40); text != "" {
		return fmt.Sprintf("starts with %q: not a profile%s", text, hint)
	}
	n := min(len(head), 8)
	var sb strings.Builder
	for i, c := range head[:n] {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "0x%02x", c)
	}
	return fmt.Sprintf("starts with bytes %s: not a profile%s", sb.String(), hint)
}

// leadingText returns up to max runes of b when b starts with printable text
// (its first line, or max runes of it), or "".
func leadingText(b []byte, max int) string {
	var out []rune
	for len(b) > 0 && len(out) < max {
		r, size := utf8.DecodeRune(b)
		if r == '\n' && len(out) > 0 {
			break
		}
		if r == utf8.RuneError || (r < 0x20 && r != '\t' && r != '\r' && r != '\n') || r == 0x7f {
			return ""
		}
		out = append(out, r)
		b = b[size:]
	}
	return string(out)
}

// looksLegacyText reports whether b starts as one of the text formats that
// pprof's parser reads: "heap profile: ...", "goroutine profile: total 5",
// "--- contention:", "--- threadz 1 ---" and the like, after blank lines
// and # comments.
func looksLegacyText(b []byte) bool {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		return bytes.HasPrefix(line, []byte("--- ")) || bytes.Contains(line, []byte(" profile: "))
	}
	return false
}

// looksLegacyCPU reports whether b starts with the header of pprof's legacy
// binary CPU format (words 0, 3, 0 or 1, period, 0; 32 or 64 bits, either
// byte order), which pprof's parser reads.
func looksLegacyCPU(b []byte) bool {
	for _, size := range []int{8, 4} {
		if len(b) < 5*size {
			continue
		}
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			word := func(i int) uint64 {
				if size == 8 {
					return order.Uint64(b[i*8:])
				}
				return uint64(order.Uint32(b[i*4:]))
			}
			if word(0) == 0 && word(1) == 3 && word(2) <= 1 && word(3) > 0 && word(4) == 0 {
				return true
			}
		}
	}
	return false
}

// checker follows a format's bytes as they are read.
type checker interface{ Feed([]byte) error }

// checkReader passes on what it reads to a checker and fails as soon as
// the checker does.
type checkReader struct {
	r   io.Reader
	c   checker
	err error
}

func (p *checkReader) Read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.r.Read(b)
	if cerr := p.c.Feed(b[:n]); cerr != nil {
		p.err = cerr
		return n, cerr
	}
	return n, err
}

// maxTextLine is the longest line pprof's parser reads in its legacy text
// formats (bufio.MaxScanTokenSize).
const maxTextLine = 64 << 10

// lineChecker refuses text that pprof's legacy text parsers would refuse
// only after reading all of it: a line longer than maxTextLine, or 64 KiB
// of nothing but white space.
type lineChecker struct {
	off, line, lineLen, blank int64
}

func (l *lineChecker) Feed(b []byte) error {
	for _, c := range b {
		l.off++
		switch c {
		case '\n':
			l.line++
			l.lineLen = 0
			l.blank++
		case ' ', '\t', '\r':
			l.lineLen++
			l.blank++
		default:
			l.lineLen++
			l.blank = 0
		}
		if l.lineLen > maxTextLine {
			return fmt.Errorf("line %d is longer than 64 KiB, more than pprof's text formats allow", l.line+1)
		}
		if l.blank > peekSize {
			return fmt.Errorf("64 KiB of nothing but white space at offset %d: not a profile", l.off-l.blank)
		}
	}
	return nil
}
