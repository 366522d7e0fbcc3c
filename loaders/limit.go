package loaders

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultMaxBytes is how much input, after decompression, Read takes in
// unless HOTBUDGET_MAX_BYTES or WithMaxBytes says otherwise: 1 GiB.
const DefaultMaxBytes int64 = 1 << 30

// MaxBytesEnv names the environment variable that sets the default limit
// on decompressed input: a number of bytes, optionally with a suffix KiB,
// MiB, GiB or TiB, or 0 for no limit.
const MaxBytesEnv = "HOTBUDGET_MAX_BYTES"

// ErrTooLarge is wrapped by the error for input larger than the limit.
var ErrTooLarge = errors.New("input too large")

// MaxBytes returns the limit on decompressed input that Read applies with
// opts: WithMaxBytes, else HOTBUDGET_MAX_BYTES, else DefaultMaxBytes;
// math.MaxInt64 when there is none. The error names a malformed
// HOTBUDGET_MAX_BYTES. A reader that bypasses Read (such as
// analysis.ParseIndex, which has its own fixed bound) checks it here.
func MaxBytes(opts ...Option) (int64, error) {
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	return c.limit()
}

// limit returns the limit on decompressed input; math.MaxInt64 for none.
func (c *config) limit() (int64, error) {
	n := c.maxBytes
	if n == 0 {
		n = DefaultMaxBytes
		if v := os.Getenv(MaxBytesEnv); v != "" {
			var err error
			if n, err = parseSize(v); err != nil {
				return 0, fmt.Errorf("%s=%q: %v", MaxBytesEnv, v, err)
			}
			if n == 0 {
				n = -1
			}
		}
	}
	if n < 0 {
		return math.MaxInt64, nil
	}
	return n, nil
}

// parseSize reads "1073741824", "512MiB" or "2GiB".
func parseSize(s string) (int64, error) {
	num, mult := s, int64(1)
	for i, suf := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if v, ok := strings.CutSuffix(s, suf); ok {
			num, mult = v, int64(1)<<(10*(i+1))
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, errors.New("want a number of bytes, such as 2147483648 or 2GiB (0: no limit)")
	}
	return n * mult, nil
}

// sizeString writes n bytes for people: "1 GiB (1073741824 bytes)".
func sizeString(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s (%d bytes)", n>>u.shift, u.name, n)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// limitReader passes on at most limit bytes of r and then fails with the
// ErrTooLarge error if r has more; over records that it did.
type limitReader struct {
	r     io.Reader
	left  int64
	limit int64
	over  bool
}

func (l *limitReader) err() error {
	return fmt.Errorf("%w: more than %s after decompression; raise the limit with %s or loaders.WithMaxBytes",
		ErrTooLarge, sizeString(l.limit), MaxBytesEnv)
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

// looksProtobuf reports whether head, the start of a file, reads as the
// top-level fields of a pprof Profile message.
func looksProtobuf(head []byte) bool {
	w := protoWalker{limit: math.MaxInt64}
	return w.feed(head) == nil && w.fields > 0
}

// protoWalker follows the top-level fields of a protobuf Profile message
// as its bytes arrive, without keeping them.
type protoWalker struct {
	limit  int64 // longest field accepted
	off    int64 // bytes seen
	fields int   // complete keys seen
	state  int   // what the next byte is part of
	v      uint64
	shift  uint
	field  uint64
	skip   int64
}

const (
	pwKey = iota
	pwVarint
	pwLength
	pwSkip
)

// profileWireTypes are the wire types pprof's decoder accepts for the
// Profile message's fields (profile.proto): 2 for messages and strings, 0
// for integers, both for the packed repeated comment field.
var profileWireTypes = map[uint64][]uint64{
	1: {2}, 2: {2}, 3: {2}, 4: {2}, 5: {2}, 6: {2}, 11: {2},
	7: {0}, 8: {0}, 9: {0}, 10: {0}, 12: {0}, 14: {0}, 15: {0},
	13: {0, 2},
}

func (w *protoWalker) fail(format string, args ...any) error {
	return fmt.Errorf("not a pprof protobuf: at offset %d: %s", w.off, fmt.Sprintf(format, args...))
}

// feed reads the next bytes of the message.
func (w *protoWalker) feed(b []byte) error {
	for len(b) > 0 {
		if w.state == pwSkip {
			n := min(int64(len(b)), w.skip)
			w.skip -= n
			w.off += n
			b = b[n:]
			if w.skip == 0 {
				w.state = pwKey
			}
			continue
		}
		c := b[0]
		b = b[1:]
		if w.shift >= 63 && c > 1 {
			return w.fail("varint too long")
		}
		w.v |= uint64(c&0x7f) << w.shift
		w.shift += 7
		w.off++
		if c&0x80 != 0 {
			continue
		}
		v := w.v
		w.v, w.shift = 0, 0
		switch w.state {
		case pwKey:
			w.field = v >> 3
			typ := v & 7
			if w.field == 0 {
				return w.fail("field number 0")
			}
			if want, ok := profileWireTypes[w.field]; ok && !slices.Contains(want, typ) {
				return w.fail("field %d with wire type %d", w.field, typ)
			}
			w.fields++
			switch typ {
			case 0:
				w.state = pwVarint
			case 1:
				w.state, w.skip = pwSkip, 8
			case 2:
				w.state = pwLength
			case 5:
				w.state, w.skip = pwSkip, 4
			default:
				return w.fail("field %d with wire type %d", w.field, typ)
			}
		case pwVarint:
			w.state = pwKey
		case pwLength:
			if v > uint64(w.limit) {
				return fmt.Errorf("%w: field %d at offset %d is %d bytes long, more than the limit of %s; raise the limit with %s or loaders.WithMaxBytes",
					ErrTooLarge, w.field, w.off, v, sizeString(w.limit), MaxBytesEnv)
			}
			w.state, w.skip = pwSkip, int64(v)
			if v == 0 {
				w.state = pwKey
			}
		}
	}
	return nil
}

// checker follows a format's bytes as they are read.
type checker interface{ feed([]byte) error }

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
	if cerr := p.c.feed(b[:n]); cerr != nil {
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

func (l *lineChecker) feed(b []byte) error {
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
