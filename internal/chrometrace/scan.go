package chrometrace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// scanner is a small streaming JSON reader with its own buffer. It reads
// integer arrays without allocating per number (the bulk of a .cpuprofile)
// and hands single nodes to encoding/json as raw bytes. off() is the offset
// of the next byte, for error messages.
type scanner struct {
	r        io.Reader
	buf      []byte
	pos, end int
	base     int64  // input offset of buf[0]
	err      error  // sticky read error
	raw      []byte // scratch for raw values
}

var errEOF = errors.New("unexpected end of input")

func newScanner(r io.Reader) *scanner {
	return &scanner{r: r, buf: make([]byte, 64<<10)}
}

func (s *scanner) off() int64 { return s.base + int64(s.pos) }

// fill reads more input, keeping the last byte so that unread still works.
func (s *scanner) fill() error {
	if s.err != nil {
		return s.err
	}
	keep := 0
	if s.end > 0 {
		s.buf[0] = s.buf[s.end-1]
		keep = 1
	}
	s.base += int64(s.end - keep)
	s.pos, s.end = keep, keep
	for s.end == keep {
		n, err := s.r.Read(s.buf[keep:])
		s.end += n
		if err != nil {
			if n > 0 {
				s.err = s.eofErr(err)
				return nil
			}
			s.err = s.eofErr(err)
			return s.err
		}
	}
	return nil
}

func (s *scanner) eofErr(err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w at offset %d (truncated file?)", errEOF, s.base+int64(s.end))
	}
	return fmt.Errorf("at offset %d: %w", s.base+int64(s.end), err)
}

func (s *scanner) readByte() (byte, error) {
	if s.pos >= s.end {
		if err := s.fill(); err != nil {
			return 0, err
		}
	}
	c := s.buf[s.pos]
	s.pos++
	return c, nil
}

func (s *scanner) unread() { s.pos-- }

// peek skips whitespace and returns the next byte without consuming it.
func (s *scanner) peek() (byte, error) {
	for {
		c, err := s.readByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		s.unread()
		return c, nil
	}
}

func (s *scanner) syntax(want string, got byte) error {
	return fmt.Errorf("invalid JSON at offset %d: want %s, got %q", s.off(), want, got)
}

// expect consumes the next non-space byte, which must be c.
func (s *scanner) expect(c byte, want string) error {
	got, err := s.peek()
	if err != nil {
		return err
	}
	if got != c {
		return s.syntax(want, got)
	}
	s.pos++
	return nil
}

// next consumes the next non-space byte.
func (s *scanner) next() (byte, error) {
	if _, err := s.peek(); err != nil {
		return 0, err
	}
	return s.readByte()
}

// objectKey reads the next key of an object ('{' already read), or reports
// the end. first is true for the first key.
func (s *scanner) objectKey(first bool) (key string, end bool, err error) {
	c, err := s.next()
	if err != nil {
		return "", false, err
	}
	if c == '}' {
		return "", true, nil
	}
	if !first {
		if c != ',' {
			return "", false, s.syntax("',' or '}'", c)
		}
		if c, err = s.next(); err != nil {
			return "", false, err
		}
	}
	if c != '"' {
		return "", false, s.syntax("a string key", c)
	}
	if key, err = s.stringBody(); err != nil {
		return "", false, err
	}
	return key, false, s.expect(':', "':'")
}

// arrayNext moves to the next element of an array ('[' already read), or
// reports its end.
func (s *scanner) arrayNext(first bool) (end bool, err error) {
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	if c == ']' {
		_, err = s.readByte()
		return true, err
	}
	if !first {
		if c != ',' {
			return false, s.syntax("',' or ']'", c)
		}
		_, _ = s.readByte()
	}
	return false, nil
}

// stringBody reads a string whose opening quote was read.
func (s *scanner) stringBody() (string, error) {
	b := s.raw[:0]
	b = append(b, '"')
	escaped := false
	for {
		c, err := s.readByte()
		if err != nil {
			return "", err
		}
		b = append(b, c)
		switch {
		case c == '\\':
			escaped = true
			c, err = s.readByte()
			if err != nil {
				return "", err
			}
			b = append(b, c)
		case c == '"':
			s.raw = b
			if !escaped {
				return string(b[1 : len(b)-1]), nil
			}
			var v string
			if err := json.Unmarshal(b, &v); err != nil {
				return "", fmt.Errorf("invalid JSON string ending at offset %d: %w", s.off(), err)
			}
			return v, nil
		case c < 0x20:
			return "", s.syntax("a string character", c)
		}
	}
}

// value reads one whole value. Its bytes are appended to dst when keep is
// true. Nesting is counted, not recursed into; strings are honoured.
// Structure inside objects and arrays is checked only by whoever decodes
// the bytes.
func (s *scanner) value(dst []byte, keep bool) ([]byte, error) {
	_, err := s.peek()
	if err != nil {
		return dst, err
	}
	depth := 0
	var c byte
	for {
		c, err = s.readByte()
		if err != nil {
			return dst, err
		}
		if keep {
			dst = append(dst, c)
		}
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return dst, s.syntax("a value", c)
			}
		case '"':
			for {
				c, err = s.readByte()
				if err != nil {
					return dst, err
				}
				if keep {
					dst = append(dst, c)
				}
				if c == '\\' {
					if c, err = s.readByte(); err != nil {
						return dst, err
					}
					if keep {
						dst = append(dst, c)
					}
					continue
				}
				if c == '"' {
					break
				}
			}
		case ' ', '\t', '\n', '\r', ',', ':':
		default:
			if !isScalarByte(c) {
				return dst, s.syntax("a value", c)
			}
			if depth == 0 { // a scalar at the top: read the rest of it
				for {
					c, err = s.readByte()
					if err != nil {
						if errors.Is(err, errEOF) {
							return dst, nil
						}
						return dst, err
					}
					if !isScalarByte(c) {
						s.unread()
						break
					}
					if keep {
						dst = append(dst, c)
					}
				}
			}
		}
		if depth == 0 {
			return dst, nil
		}
	}
}

func isScalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '+' || c == '.'
}

// scalar reads a number or literal as raw text.
func (s *scanner) scalar(what string) (string, error) {
	c, err := s.peek()
	if err != nil {
		return "", err
	}
	if c == '"' || c == '{' || c == '[' {
		return "", fmt.Errorf("%s at offset %d: want a number, got %q", what, s.off(), c)
	}
	b, err := s.value(s.raw[:0], true)
	s.raw = b
	return string(b), err
}

// ints reads an array of integers. Numbers are gathered in fixed-size
// chunks and copied once into a slice of the exact length, which allocates
// about twice the result instead of the five times that append's growth costs.
func (s *scanner) ints(what string) ([]int64, error) {
	if err := s.expect('[', "'[' to start "+what); err != nil {
		return nil, err
	}
	const chunkLen = 1 << 15
	var full [][]int64
	cur := make([]int64, 0, 256)
	for first := true; ; first = false {
		end, err := s.arrayNext(first)
		if err != nil {
			return nil, err
		}
		if end {
			break
		}
		if _, err := s.peek(); err != nil {
			return nil, err
		}
		start := s.off()
		v, ok, err := s.int()
		if err != nil {
			return nil, err
		}
		if !ok {
			// Not a plain integer: read the rest of the token for the message.
			tok, _ := s.value(s.raw[:0], true)
			s.raw = tok
			return nil, fmt.Errorf("%s at offset %d: want integers, got %.40s (out of range or not an integer)", what, start, tok)
		}
		if len(cur) == chunkLen {
			full = append(full, cur)
			cur = make([]int64, 0, chunkLen)
		}
		cur = append(cur, v)
	}
	if len(full) == 0 {
		return cur, nil
	}
	out := make([]int64, 0, len(full)*chunkLen+len(cur))
	for _, c := range full {
		out = append(out, c...)
	}
	return append(out, cur...), nil
}

// int reads a JSON integer. ok is false (and nothing past the digits is
// consumed) when the number has a fraction or exponent or overflows.
func (s *scanner) int() (v int64, ok bool, err error) {
	c, err := s.readByte()
	if err != nil {
		return 0, false, err
	}
	neg := c == '-'
	if neg {
		if c, err = s.readByte(); err != nil {
			return 0, false, err
		}
	}
	if c < '0' || c > '9' {
		return 0, false, s.syntax("a number", c)
	}
	u := uint64(c - '0')
	overflow := false
	for {
		// Fast path: digits already in the buffer.
		i := s.pos
		for i < s.end && i-s.pos < 18 && s.buf[i] >= '0' && s.buf[i] <= '9' && u < 1e17 {
			u = u*10 + uint64(s.buf[i]-'0')
			i++
		}
		s.pos = i
		c, err = s.readByte()
		if err == nil && c >= '0' && c <= '9' {
			d := uint64(c - '0')
			if u > (math.MaxUint64-d)/10 {
				overflow = true
			} else {
				u = u*10 + d
			}
			continue
		}
		if err != nil {
			if errors.Is(err, errEOF) {
				break
			}
			return 0, false, err
		}
		if c < '0' || c > '9' {
			s.unread()
			if c == '.' || c == 'e' || c == 'E' {
				return 0, false, nil
			}
			break
		}
	}
	if overflow || (!neg && u > math.MaxInt64) || (neg && u > 1<<63) {
		return 0, false, nil
	}
	if neg {
		return int64(-u), true, nil
	}
	return int64(u), true, nil
}

// toInt converts a JSON number to int64, rounding fractions; out of range is an error.
func toInt(n string) (int64, error) {
	if i, err := strconv.ParseInt(n, 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return 0, fmt.Errorf("%.40q is not a number", n)
	}
	if math.IsNaN(f) || f >= math.MaxInt64 || f <= math.MinInt64 {
		return 0, fmt.Errorf("number %s out of range", n)
	}
	return int64(math.Round(f)), nil
}

// strBytes reads a string value whose opening quote was read and returns
// its unescaped bytes. The slice is valid until the next scanner call.
func (s *scanner) strBytes() ([]byte, error) {
	// Fast path: the whole string is in the buffer and has no escapes.
	for i := s.pos; i < s.end; i++ {
		c := s.buf[i]
		if c == '"' {
			b := s.buf[s.pos:i]
			s.pos = i + 1
			return b, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	str, err := s.stringBody()
	if err != nil {
		return nil, err
	}
	s.raw = append(s.raw[:0], str...)
	return s.raw, nil
}

// skipString skips a string whose opening quote was read.
func (s *scanner) skipString() error {
	for {
		i := s.pos
		for i < s.end {
			c := s.buf[i]
			if c == '"' {
				s.pos = i + 1
				return nil
			}
			if c == '\\' {
				break
			}
			i++
		}
		s.pos = i
		c, err := s.readByte()
		if err != nil {
			return err
		}
		switch c {
		case '"':
			return nil
		case '\\':
			if _, err := s.readByte(); err != nil {
				return err
			}
		}
	}
}

// skip skips one whole value quickly, without keeping it. Nesting is
// counted, not recursed into.
func (s *scanner) skip() error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c != '{' && c != '[' {
		if c == '"' {
			s.pos++
			return s.skipString()
		}
		_, err := s.value(nil, false)
		return err
	}
	depth := 0
	for {
		if s.pos >= s.end {
			if err := s.fill(); err != nil {
				return err
			}
		}
		// Scan the buffer directly for the bytes that matter.
		i := s.pos
		for i < s.end {
			c = s.buf[i]
			i++
			switch c {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.pos = i
					return nil
				}
			case '"':
				s.pos = i
				if err := s.skipString(); err != nil {
					return err
				}
				i = s.pos
			}
		}
		s.pos = i
	}
}
