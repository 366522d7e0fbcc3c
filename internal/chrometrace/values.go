package chrometrace

import (
	"fmt"
	"math"
	"strconv"

	"github.com/hotbudget/hotbudget/internal/jsonscan"
)

// key reads the next key of an object, returning a view of its bytes.
func (p *parser) key(first bool) (key []byte, end bool, err error) {
	s := p.s
	// Fast path: `,"key":` (or `"key":` first) compact in the buffer.
	if i := s.Pos; i+1 < s.End {
		if !first && s.Buf[i] == ',' {
			i++
		}
		if s.Buf[i] == '"' && (i > s.Pos || first) {
			for j := i + 1; j < s.End; j++ {
				c := s.Buf[j]
				if c == '"' {
					if j+1 < s.End && s.Buf[j+1] == ':' {
						s.Pos = j + 2
						return s.Buf[i+1 : j], false, nil
					}
					break
				}
				if c == '\\' || c < 0x20 {
					break
				}
			}
		}
	}
	c, err := s.Next()
	if err != nil {
		return nil, false, err
	}
	if c == '}' {
		return nil, true, nil
	}
	if !first {
		if c != ',' {
			return nil, false, s.Syntax("',' or '}'", c)
		}
		if c, err = s.Next(); err != nil {
			return nil, false, err
		}
	}
	if c != '"' {
		return nil, false, s.Syntax("a string key", c)
	}
	if key, err = s.StrBytes(); err != nil {
		return nil, false, err
	}
	// The colon: usually right there.
	if s.Pos < s.End && s.Buf[s.Pos] == ':' {
		s.Pos++
		return key, false, nil
	}
	// Keep the key across reads.
	k := append([]byte(nil), key...)
	return k, false, s.Expect(':', "':'")
}

// stringValue reads a value that must be a string.
func (p *parser) stringValue(what string) ([]byte, error) {
	s := p.s
	c, err := s.Peek()
	if err != nil {
		return nil, err
	}
	if c != '"' {
		return nil, fmt.Errorf("%s at offset %d: want a string, got %q", what, s.Off(), c)
	}
	s.Pos++
	return s.StrBytes()
}

// idValue reads a pid, tid or id: a number or a string, kept as text.
func (p *parser) idValue(what string) (string, error) {
	s := p.s
	c, err := s.Peek()
	if err != nil {
		return "", err
	}
	// Most events repeat the pid, tid or id of one a few before.
	slot := 2
	switch what {
	case "pid":
		slot = 0
	case "tid":
		slot = 1
	}
	if c == '"' {
		s.Pos++
		b, err := s.StrBytes()
		if err != nil {
			return "", err
		}
		cache := &p.lastStrs[slot]
		if cache.text == "" || string(b) != cache.text {
			cache.text = p.intern(b)
		}
		return cache.text, nil
	}
	if c == '{' || c == '[' {
		return "", fmt.Errorf("%s at offset %d: want a number or a string, got %q", what, s.Off(), c)
	}
	off := s.Off()
	b, err := s.ScalarBytes()
	if err != nil {
		return "", err
	}
	cache := &p.lastIDs[slot]
	if cache.text != "" && string(b) == cache.text {
		return cache.text, nil
	}
	if string(b) == "null" {
		return "", nil
	}
	if !digits(b) {
		if _, err := strconv.ParseFloat(string(b), 64); err != nil {
			return "", fmt.Errorf("%s at offset %d: want a number or a string, got %.40s", what, off, b)
		}
	}
	cache.text = p.intern(b)
	return cache.text, nil
}

// digits reports whether b is a plain decimal integer, which needs no
// further check to be a number.
func digits(b []byte) bool {
	if len(b) == 0 || len(b) > 18 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// micros reads a time in µs (a number, or a number in a string) as ns.
func (p *parser) micros(what string) (int64, error) {
	s := p.s
	off := s.Off()
	c, err := s.Peek()
	if err != nil {
		return 0, err
	}
	var b []byte
	switch c {
	case '"':
		s.Pos++
		if b, err = s.StrBytes(); err != nil {
			return 0, err
		}
	case '{', '[':
		return 0, fmt.Errorf("%s at offset %d: want a number, got %q", what, off, c)
	default:
		if b, err = s.ScalarBytes(); err != nil {
			return 0, err
		}
	}
	v, err := parseNanos(b)
	if err != nil {
		return 0, fmt.Errorf("%s at offset %d: %w", what, off, err)
	}
	return v, nil
}

// maxMicros bounds times so that sums of nanoseconds cannot overflow.
const maxMicros = math.MaxInt64 / 4000

// parseNanos parses a number of µs into ns, rounding below a ns.
func parseNanos(b []byte) (int64, error) {
	neg := len(b) > 0 && b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	if len(digits) > 0 && len(digits) <= 15 {
		var v int64
		ok := true
		for _, c := range digits {
			if c < '0' || c > '9' {
				ok = false
				break
			}
			v = v*10 + int64(c-'0')
		}
		if ok {
			if neg {
				v = -v
			}
			return v * 1000, nil
		}
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, fmt.Errorf("%.40q is not a number", b)
	}
	if math.IsNaN(f) || math.Abs(f) > maxMicros {
		return 0, fmt.Errorf("%.40s is out of range", b)
	}
	return int64(math.Round(f * 1000)), nil
}

// fields reads an object value field by field: field reads the value of
// each key it knows and reports whether it did; the other values are
// skipped. A value that is not an object is skipped and, when what names
// it, recorded as a type error. ok says it was an object.
func (p *parser) fields(what string, field func(key []byte) (bool, error)) (ok bool, err error) {
	s := p.s
	c, err := s.Peek()
	if err != nil {
		return false, err
	}
	if c != '{' {
		if what != "" {
			p.typeError(fmt.Errorf("%s at offset %d: want an object, got %q", what, s.Off(), c))
		}
		return false, s.Skip()
	}
	s.Pos++
	for first := true; ; first = false {
		key, end, err := p.key(first)
		if err != nil || end {
			return true, err
		}
		done, err := field(key)
		if err != nil {
			return true, err
		}
		if !done {
			if err := s.Skip(); err != nil {
				return true, err
			}
		}
	}
}

func (p *parser) typeError(err error) {
	if p.ev.typeErr == nil {
		p.ev.typeErr = err
	}
}

// ints appends an array of integers to dst. Malformed JSON is an error;
// well-formed values of another type are recorded as a type error and
// skipped.
func (p *parser) ints(what string, dst []int64) ([]int64, error) {
	s := p.s
	c, err := s.Peek()
	if err != nil {
		return dst, err
	}
	if c != '[' {
		p.typeError(fmt.Errorf("%s at offset %d: want an array, got %q", what, s.Off(), c))
		return dst, s.Skip()
	}
	s.Pos++
	for first := true; ; first = false {
		// Fast path: a plain integer followed by ',' or ']', in the buffer.
		if !first && s.Pos+22 < s.End {
			if v, n := jsonscan.NextInt(s.Buf[s.Pos:s.End]); n > 0 {
				dst = append(dst, v)
				s.Pos += n
				continue
			}
		}
		end, err := s.ArrayNext(first)
		if err != nil {
			return dst, err
		}
		if end {
			return dst, nil
		}
		c, err := s.Peek()
		if err != nil {
			return dst, err
		}
		if c == '-' || c >= '0' && c <= '9' {
			off := s.Off()
			v, ok, err := s.Int()
			if err != nil {
				return dst, err
			}
			if ok {
				dst = append(dst, v)
				continue
			}
			p.typeError(fmt.Errorf("%s at offset %d: want integers (out of range or a fraction)", what, off))
		} else {
			p.typeError(fmt.Errorf("%s at offset %d: want integers, got %q", what, s.Off(), c))
		}
		if _, err := s.Value(nil, false); err != nil {
			return dst, err
		}
	}
}
