// Package jsonscan is a small streaming JSON reader with its own buffer,
// shared by the V8 .cpuprofile and Chrome trace loaders: it reads integer
// arrays without allocating per number and hands single values to
// encoding/json as raw bytes. Callers on hot paths may read Buf[Pos:End]
// directly and advance Pos.
package jsonscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Scanner is a small streaming JSON reader with its own buffer. It reads
// integer arrays without allocating per number (the bulk of a .cpuprofile)
// and hands single nodes to encoding/json as raw bytes. Off is the offset
// of the next byte, for error messages. Buf[Pos:End] is the unread part of
// the buffer; Raw is scratch space for raw values.
type Scanner struct {
	r        io.Reader
	Buf      []byte
	Pos, End int
	base     int64  // input offset of buf[0]
	err      error  // sticky read error
	Raw      []byte // scratch for raw values
}

// ErrEOF is wrapped by errors for input that ends too early.
var ErrEOF = errors.New("unexpected end of input")

// New returns a Scanner reading r through a 64 KB buffer.
func New(r io.Reader) *Scanner {
	return &Scanner{r: r, Buf: make([]byte, 64<<10)}
}

// Off is the input offset of the next byte, for error messages.
func (s *Scanner) Off() int64 { return s.base + int64(s.Pos) }

// Fill reads more input, keeping the last byte so that unread still works.
func (s *Scanner) Fill() error {
	if s.err != nil {
		return s.err
	}
	keep := 0
	if s.End > 0 {
		s.Buf[0] = s.Buf[s.End-1]
		keep = 1
	}
	s.base += int64(s.End - keep)
	s.Pos, s.End = keep, keep
	for s.End == keep {
		n, err := s.r.Read(s.Buf[keep:])
		s.End += n
		if err != nil {
			if n > 0 {
				s.err = s.EOFErr(err)
				return nil
			}
			s.err = s.EOFErr(err)
			return s.err
		}
	}
	return nil
}

// EOFErr turns a read error into one that names the offset; the end of
// input becomes ErrEOF (a truncated file).
func (s *Scanner) EOFErr(err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w at offset %d (truncated file?)", ErrEOF, s.base+int64(s.End))
	}
	return fmt.Errorf("at offset %d: %w", s.base+int64(s.End), err)
}

// ReadByte returns the next byte, white space included.
func (s *Scanner) ReadByte() (byte, error) {
	if s.Pos >= s.End {
		if err := s.Fill(); err != nil {
			return 0, err
		}
	}
	c := s.Buf[s.Pos]
	s.Pos++
	return c, nil
}

// Unread steps back over the byte ReadByte returned last.
func (s *Scanner) Unread() { s.Pos-- }

// Peek skips whitespace and returns the next byte without consuming it.
func (s *Scanner) Peek() (byte, error) {
	if s.Pos < s.End {
		if c := s.Buf[s.Pos]; c > ' ' {
			return c, nil
		}
	}
	for {
		c, err := s.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		s.Unread()
		return c, nil
	}
}

// Syntax is the error for byte got where want was expected.
func (s *Scanner) Syntax(want string, got byte) error {
	return fmt.Errorf("invalid JSON at offset %d: want %s, got %q", s.Off(), want, got)
}

// Expect consumes the next non-space byte, which must be c.
func (s *Scanner) Expect(c byte, want string) error {
	got, err := s.Peek()
	if err != nil {
		return err
	}
	if got != c {
		return s.Syntax(want, got)
	}
	s.Pos++
	return nil
}

// Next consumes the next non-space byte.
func (s *Scanner) Next() (byte, error) {
	if _, err := s.Peek(); err != nil {
		return 0, err
	}
	return s.ReadByte()
}

// ObjectKey reads the next key of an object ('{' already read), or reports
// the end. first is true for the first key.
func (s *Scanner) ObjectKey(first bool) (key string, end bool, err error) {
	c, err := s.Next()
	if err != nil {
		return "", false, err
	}
	if c == '}' {
		return "", true, nil
	}
	if !first {
		if c != ',' {
			return "", false, s.Syntax("',' or '}'", c)
		}
		if c, err = s.Next(); err != nil {
			return "", false, err
		}
	}
	if c != '"' {
		return "", false, s.Syntax("a string key", c)
	}
	if key, err = s.StringBody(); err != nil {
		return "", false, err
	}
	return key, false, s.Expect(':', "':'")
}

// ArrayNext moves to the next element of an array ('[' already read), or
// reports its end.
func (s *Scanner) ArrayNext(first bool) (end bool, err error) {
	c, err := s.Peek()
	if err != nil {
		return false, err
	}
	if c == ']' {
		_, err = s.ReadByte()
		return true, err
	}
	if !first {
		if c != ',' {
			return false, s.Syntax("',' or ']'", c)
		}
		_, _ = s.ReadByte()
	}
	return false, nil
}

// Elements reads the elements of an array ('[' already read) one at a
// time, calling fn with each one's index, offset and bytes, which stay
// valid until fn returns. buf is reused for the bytes; the grown buffer is
// returned for the next call.
func (s *Scanner) Elements(buf []byte, fn func(i int, off int64, raw []byte) error) ([]byte, error) {
	for i, first := 0, true; ; i, first = i+1, false {
		end, err := s.ArrayNext(first)
		if err != nil || end {
			return buf, err
		}
		if _, err := s.Peek(); err != nil {
			return buf, err
		}
		off := s.Off()
		if buf, err = s.Value(buf[:0], true); err != nil {
			return buf, err
		}
		if err := fn(i, off, buf); err != nil {
			return buf, err
		}
	}
}

// StringBody reads a string whose opening quote was read.
func (s *Scanner) StringBody() (string, error) {
	b := s.Raw[:0]
	b = append(b, '"')
	escaped := false
	for {
		c, err := s.ReadByte()
		if err != nil {
			return "", err
		}
		b = append(b, c)
		switch {
		case c == '\\':
			escaped = true
			c, err = s.ReadByte()
			if err != nil {
				return "", err
			}
			b = append(b, c)
		case c == '"':
			s.Raw = b
			if !escaped {
				return string(b[1 : len(b)-1]), nil
			}
			var v string
			if err := json.Unmarshal(b, &v); err != nil {
				return "", fmt.Errorf("invalid JSON string ending at offset %d: %w", s.Off(), err)
			}
			return v, nil
		case c < 0x20:
			return "", s.Syntax("a string character", c)
		}
	}
}

// Value reads one whole value. Its bytes are appended to dst when keep is
// true. Nesting is counted, not recursed into; strings are honoured.
// Structure inside objects and arrays is checked only by whoever decodes
// the bytes.
func (s *Scanner) Value(dst []byte, keep bool) ([]byte, error) {
	_, err := s.Peek()
	if err != nil {
		return dst, err
	}
	depth := 0
	var c byte
	for {
		c, err = s.ReadByte()
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
				return dst, s.Syntax("a value", c)
			}
		case '"':
			for {
				c, err = s.ReadByte()
				if err != nil {
					return dst, err
				}
				if keep {
					dst = append(dst, c)
				}
				if c == '\\' {
					if c, err = s.ReadByte(); err != nil {
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
			if !IsScalarByte(c) {
				return dst, s.Syntax("a value", c)
			}
			if depth == 0 { // a scalar at the top: read the rest of it
				for {
					c, err = s.ReadByte()
					if err != nil {
						if errors.Is(err, ErrEOF) {
							return dst, nil
						}
						return dst, err
					}
					if !IsScalarByte(c) {
						s.Unread()
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

// IsScalarByte reports whether c may appear in a JSON number or literal.
func IsScalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '+' || c == '.'
}

// ScalarBytes reads a value that starts with a scalar byte (a number or a
// literal) and returns its bytes, as Value(s.Raw[:0], true) does: a view
// of the buffer when the scalar ends inside it (the common case, without a
// copy), else s.Raw. Other values go to Value.
func (s *Scanner) ScalarBytes() ([]byte, error) {
	c, err := s.Peek()
	if err != nil {
		return nil, err
	}
	if end, ok := s.bufferedScalar(c); ok {
		b := s.Buf[s.Pos:end]
		s.Pos = end
		return b, nil
	}
	b, err := s.Value(s.Raw[:0], true)
	s.Raw = b
	return b, err
}

// bufferedScalar returns where the number or literal starting with c at
// s.Pos ends, when it ends within the buffer.
func (s *Scanner) bufferedScalar(c byte) (int, bool) {
	if !IsScalarByte(c) {
		return 0, false
	}
	i := s.Pos + 1
	for i < s.End && IsScalarByte(s.Buf[i]) {
		i++
	}
	return i, i < s.End
}

// Scalar reads a number or literal as raw text.
func (s *Scanner) Scalar(what string) (string, error) {
	c, err := s.Peek()
	if err != nil {
		return "", err
	}
	if c == '"' || c == '{' || c == '[' {
		return "", fmt.Errorf("%s at offset %d: want a number, got %q", what, s.Off(), c)
	}
	b, err := s.Value(s.Raw[:0], true)
	s.Raw = b
	return string(b), err
}

// Ints reads an array of integers. Numbers are gathered in fixed-size
// chunks and copied once into a slice of the exact length, which allocates
// about twice the result instead of the five times that append's growth costs.
func (s *Scanner) Ints(what string) ([]int64, error) { return s.IntsHint(what, 0) }

// IntsHint is Ints for an array expected to hold n integers (an array of
// the same length read before, say): they go straight into one slice of
// that capacity, which is returned as it is when the guess was right.
func (s *Scanner) IntsHint(what string, n int) ([]int64, error) {
	if err := s.Expect('[', "'[' to start "+what); err != nil {
		return nil, err
	}
	const chunkLen = 1 << 15
	var full [][]int64
	cur := make([]int64, 0, max(n, 256))
	for first := true; ; first = false {
		// Fast path: a plain integer followed by ',' or ']', in the buffer.
		if !first && s.Pos+22 < s.End {
			if v, n := NextInt(s.Buf[s.Pos:s.End]); n > 0 {
				if len(cur) == cap(cur) {
					full = append(full, cur)
					cur = make([]int64, 0, chunkLen)
				}
				cur = append(cur, v)
				s.Pos += n
				continue
			}
		}
		end, err := s.ArrayNext(first)
		if err != nil {
			return nil, err
		}
		if end {
			break
		}
		if _, err := s.Peek(); err != nil {
			return nil, err
		}
		start, startPos, startBase := s.Off(), s.Pos, s.base
		v, ok, err := s.Int()
		if err != nil {
			return nil, err
		}
		if !ok {
			// Not a plain integer: Int took its digits; the message shows
			// them (while the buffer still holds them) and the rest.
			head := "…"
			if s.base == startBase {
				head = string(s.Buf[startPos:s.Pos])
			}
			tok, _ := s.Value(s.Raw[:0], true)
			s.Raw = tok
			return nil, fmt.Errorf("%s at offset %d: want integers, got %.40s (out of range or not an integer)", what, start, head+string(tok))
		}
		if len(cur) == cap(cur) {
			full = append(full, cur)
			cur = make([]int64, 0, chunkLen)
		}
		cur = append(cur, v)
	}
	if len(full) == 0 {
		return cur, nil
	}
	total := len(cur)
	for _, c := range full {
		total += len(c)
	}
	out := make([]int64, 0, total)
	for _, c := range full {
		out = append(out, c...)
	}
	return append(out, cur...), nil
}

// NextInt parses ",<int>" at the start of b, the next element of an integer
// array, when the integer has at most 18 digits and is followed by ',' or
// ']' (which is not consumed); n is the bytes it took, 0 when b does not
// start that way (white space, a fraction, a longer number: the caller
// takes the general path). b must hold at least 22 bytes.
func NextInt(b []byte) (v int64, n int) {
	if b[0] != ',' {
		return 0, 0
	}
	i := 1
	neg := b[i] == '-'
	if neg {
		i++
	}
	start := i
	for i < len(b) && i-start < 18 && b[i] >= '0' && b[i] <= '9' {
		v = v*10 + int64(b[i]-'0')
		i++
	}
	if i == start || i >= len(b) || (b[i] != ',' && b[i] != ']') {
		return 0, 0
	}
	if neg {
		v = -v
	}
	return v, i
}

// Int reads a JSON integer. ok is false (and nothing past the digits is
// consumed) when the number has a fraction or exponent or overflows.
func (s *Scanner) Int() (v int64, ok bool, err error) {
	c, err := s.ReadByte()
	if err != nil {
		return 0, false, err
	}
	neg := c == '-'
	if neg {
		if c, err = s.ReadByte(); err != nil {
			return 0, false, err
		}
	}
	if c < '0' || c > '9' {
		return 0, false, s.Syntax("a number", c)
	}
	u := uint64(c - '0')
	overflow := false
	for {
		// Fast path: digits already in the buffer.
		i := s.Pos
		for i < s.End && i-s.Pos < 18 && s.Buf[i] >= '0' && s.Buf[i] <= '9' && u < 1e17 {
			u = u*10 + uint64(s.Buf[i]-'0')
			i++
		}
		s.Pos = i
		c, err = s.ReadByte()
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
			if errors.Is(err, ErrEOF) {
				break
			}
			return 0, false, err
		}
		if c < '0' || c > '9' {
			s.Unread()
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

// ToInt converts a JSON number to int64, rounding fractions; out of range is an error.
func ToInt(n string) (int64, error) {
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

// StrBytes reads a string value whose opening quote was read and returns
// its unescaped bytes. The slice is valid until the next scanner call.
func (s *Scanner) StrBytes() ([]byte, error) {
	// Fast path: the whole string is in the buffer and has no escapes.
	for i := s.Pos; i < s.End; i++ {
		c := s.Buf[i]
		if c == '"' {
			b := s.Buf[s.Pos:i]
			s.Pos = i + 1
			return b, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	str, err := s.StringBody()
	if err != nil {
		return nil, err
	}
	s.Raw = append(s.Raw[:0], str...)
	return s.Raw, nil
}

// SkipString skips a string whose opening quote was read.
func (s *Scanner) SkipString() error {
	for {
		i := s.Pos
		for i < s.End {
			c := s.Buf[i]
			if c == '"' {
				s.Pos = i + 1
				return nil
			}
			if c == '\\' {
				break
			}
			i++
		}
		s.Pos = i
		c, err := s.ReadByte()
		if err != nil {
			return err
		}
		switch c {
		case '"':
			return nil
		case '\\':
			if _, err := s.ReadByte(); err != nil {
				return err
			}
		}
	}
}

// Skip skips one whole value quickly, without keeping it. Nesting is
// counted, not recursed into.
func (s *Scanner) Skip() error {
	c, err := s.Peek()
	if err != nil {
		return err
	}
	if c != '{' && c != '[' {
		if c == '"' {
			s.Pos++
			return s.SkipString()
		}
		// A scalar is stepped over in the buffer; one that runs past it
		// is read without being kept.
		if end, ok := s.bufferedScalar(c); ok {
			s.Pos = end
			return nil
		}
		_, err := s.Value(nil, false)
		return err
	}
	depth := 0
	for {
		if s.Pos >= s.End {
			if err := s.Fill(); err != nil {
				return err
			}
		}
		// Scan the buffer directly for the bytes that matter.
		i := s.Pos
		for i < s.End {
			c = s.Buf[i]
			i++
			switch c {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.Pos = i
					return nil
				}
			case '"':
				s.Pos = i
				if err := s.SkipString(); err != nil {
					return err
				}
				i = s.Pos
			}
		}
		s.Pos = i
	}
}

// SkipTokens skips the JSON value whose first token next returns, without
// recursion: next is encoding/json's Decoder.Token or a wrapper of it.
func SkipTokens(next func() (json.Token, error)) error {
	depth := 0
	for {
		t, err := next()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
