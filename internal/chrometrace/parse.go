package chrometrace

import (
	"errors"
	"fmt"
	"github.com/hotbudget/hotbudget/internal/jsonscan"
	"io"
	"math"
	"strconv"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	v8 "github.com/hotbudget/hotbudget/internal/v8"
)

// Format is the format name Parse records in the profile.
const Format = "chrome-trace"

// MaxDepth bounds the nesting of duration events on one thread.
const MaxDepth = 10000

// Parse reads a Chrome trace-event file. See the package documentation.
func Parse(r io.Reader, o pbuild.Options) (*profile.Profile, error) {
	switch o.View {
	case "", pbuild.ViewSamples, pbuild.ViewDurations:
	default:
		return nil, fmt.Errorf("unknown view %q (want %q or %q)", o.View, pbuild.ViewSamples, pbuild.ViewDurations)
	}
	p := newParser(r)
	p.view = o.View
	p.meter = o.Meter
	if err := p.top(); err != nil {
		return nil, err
	}
	return p.finish(o.View)
}

// event is the part of one trace event the parser keeps. It is reused.
type event struct {
	ph         string
	name       string
	pid, tid   string
	id         string
	ts, dur    int64 // ns
	hasTs      bool
	hasDur     bool
	argName    string // args.name (M events)
	hasArgName bool
	data       bool // args.data seen
	// CPU profile parts of args.data
	cpuProfile         bool
	nodes              []v8.Node
	samples, deltas    []int64
	hasSamples         bool
	hasDeltas          bool
	startTime, endTime int64 // µs
	hasStart, hasEnd   bool
	typeErr            error // first wrong-typed profile field; reported only for profile events
}

func (e *event) reset() {
	*e = event{nodes: e.nodes[:0], samples: e.samples[:0], deltas: e.deltas[:0]}
}

type parser struct {
	meter     *membudget.Meter // charged by the builders
	s         *jsonscan.Scanner
	ev        event
	n         int // events read
	strs      map[string]string
	warns     []string          // distinct warnings in order
	warnN     map[string]int    // how often each
	threads   registry[thread]  // by pid and tid
	procs     map[string]string // pid → process name
	profs     registry[cpuProf] // by pid and profile id
	phases    map[string]bool   // unknown phases warned about
	hermes    *hermes
	names     map[string]string // pid+tid → thread name
	truncated bool
	view      string
	durCount  int  // duration events read
	dropDur   bool // samples will be shown: duration events are counted, not kept
	rawNode   []byte
	lastIDs   [3]struct{ text string } // the last pid, tid and id read as numbers
	lastStrs  [3]struct{ text string } // the last pid, tid and id read as strings
}

func newParser(r io.Reader) *parser {
	return &parser{
		s:      jsonscan.New(r),
		strs:   map[string]string{},
		procs:  map[string]string{},
		phases: map[string]bool{},
		names:  map[string]string{},
		warnN:  map[string]int{},
	}
}

func (p *parser) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if _, ok := p.warnN[msg]; !ok {
		p.warns = append(p.warns, msg)
	}
	p.warnN[msg]++
}

// intern returns b as a string, shared with earlier equal strings.
func (p *parser) intern(b []byte) string {
	if s, ok := p.strs[string(b)]; ok {
		return s
	}
	return p.internString(string(b))
}

// internString is intern for a string.
func (p *parser) internString(s string) string {
	if t, ok := p.strs[s]; ok {
		return t
	}
	if len(p.strs) < 1<<20 {
		p.strs[s] = s
	}
	return s
}

// top reads the whole input.
func (p *parser) top() error {
	s := p.s
	// A UTF-8 byte order mark.
	if c, err := s.Peek(); err == nil && c == 0xef {
		for _, want := range []byte{0xef, 0xbb, 0xbf} {
			if c, err := s.ReadByte(); err != nil || c != want {
				return fmt.Errorf("at offset %d: invalid byte order mark", s.Off())
			}
		}
	}
	c, err := s.Peek()
	if errors.Is(err, jsonscan.ErrEOF) {
		return errors.New("empty input")
	}
	if err != nil {
		return err
	}
	switch c {
	case '[':
		s.Pos++
		if err := p.events("events"); err != nil {
			return err
		}
	case '{':
		s.Pos++
		if err := p.object(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("at offset %d: want a JSON array or object of trace events, got %q", s.Off(), c)
	}
	// Only white space may follow.
	if c, err := s.Peek(); err == nil {
		return fmt.Errorf("at offset %d: unexpected %q after the trace", s.Off(), c)
	} else if !errors.Is(err, jsonscan.ErrEOF) {
		return err
	}
	return nil
}

// object reads the top-level object; '{' was read.
func (p *parser) object() error {
	s := p.s
	seen := false
	for first := true; ; first = false {
		key, end, err := s.ObjectKey(first)
		if errors.Is(err, jsonscan.ErrEOF) && seen {
			p.warnf("the top-level object is not closed (truncated file?)")
			return nil
		}
		if err != nil {
			return err
		}
		if end {
			break
		}
		switch key {
		case "traceEvents":
			if seen {
				return fmt.Errorf("at offset %d: a second traceEvents key", s.Off())
			}
			seen = true
			c, err := s.Peek()
			if err != nil {
				return err
			}
			if c != '[' {
				return fmt.Errorf("traceEvents at offset %d: want an array, got %q", s.Off(), c)
			}
			s.Pos++
			if err := p.events("traceEvents"); err != nil {
				return err
			}
			if p.truncated {
				return nil
			}
		case "samples":
			if err := p.hermesSamples(); err != nil {
				return err
			}
		case "stackFrames":
			if err := p.stackFrames(); err != nil {
				return err
			}
		default:
			if err := s.Skip(); err != nil {
				return fmt.Errorf("top-level key %q: %w", key, err)
			}
		}
	}
	if !seen && p.hermes == nil {
		return errors.New("no traceEvents key: not a Chrome trace")
	}
	return nil
}

// events reads an array of events; '[' was read. A missing ']' (the
// file ends after an event, a comma or white space) is accepted with a
// warning; a file that ends inside an event is an error.
func (p *parser) events(what string) error {
	s := p.s
	for i := 0; ; i++ {
		c, err := s.Peek()
		if errors.Is(err, jsonscan.ErrEOF) {
			p.truncatedAt(what, i)
			return nil
		}
		if err != nil {
			return err
		}
		if c == ']' {
			s.Pos++
			return nil
		}
		if i > 0 {
			if c != ',' {
				return fmt.Errorf("%s at offset %d: after event %d: want ',' or ']', got %q", what, s.Off(), i-1, c)
			}
			s.Pos++
			c, err = s.Peek()
			if errors.Is(err, jsonscan.ErrEOF) {
				p.truncatedAt(what, i)
				return nil
			}
			if err != nil {
				return err
			}
			if c == ']' { // a trailing comma
				s.Pos++
				p.warnf("%s: trailing comma before ']'", what)
				return nil
			}
		}
		off := s.Off()
		if c != '{' {
			return fmt.Errorf("%s[%d] at offset %d: want an event object, got %q", what, i, off, c)
		}
		s.Pos++
		if err := p.event(); err != nil {
			if errors.Is(err, jsonscan.ErrEOF) {
				return fmt.Errorf("%s[%d] starting at offset %d is cut off (truncated file?): %w", what, i, off, err)
			}
			return fmt.Errorf("%s[%d] at offset %d: %w", what, i, off, err)
		}
		if err := p.dispatch(i, off); err != nil {
			return fmt.Errorf("%s[%d] (%s %q) at offset %d: %w", what, i, p.ev.ph, p.ev.name, off, err)
		}
		p.n++
	}
}

func (p *parser) truncatedAt(what string, n int) {
	p.truncated = true
	p.warnf("%s: the array is not closed after %d events (truncated file?); read what is there", what, n)
}

// event reads one event object; '{' was read.
func (p *parser) event() error {
	s := p.s
	e := &p.ev
	e.reset()
	for first := true; ; first = false {
		key, end, err := p.key(first)
		if err != nil {
			return err
		}
		if end {
			return nil
		}
		switch string(key) {
		case "ph":
			b, err := p.stringValue("ph")
			if err != nil {
				return err
			}
			if len(b) == 1 && b[0] < 0x80 {
				e.ph = phaseStrings[b[0]] // no map lookup for the usual phases
			} else {
				e.ph = p.intern(b)
			}
		case "name":
			c, err := s.Peek()
			if err != nil {
				return err
			}
			if c != '"' {
				if err := s.Skip(); err != nil {
					return err
				}
				continue
			}
			s.Pos++
			b, err := s.StrBytes()
			if err != nil {
				return err
			}
			e.name = p.intern(b)
		case "pid":
			if e.pid, err = p.idValue("pid"); err != nil {
				return err
			}
		case "tid":
			if e.tid, err = p.idValue("tid"); err != nil {
				return err
			}
		case "id":
			if e.id, err = p.idValue("id"); err != nil {
				return err
			}
		case "ts":
			if e.ts, err = p.micros("ts"); err != nil {
				return err
			}
			e.hasTs = true
		case "dur":
			if e.dur, err = p.micros("dur"); err != nil {
				return err
			}
			e.hasDur = true
		case "args":
			if err := p.args(); err != nil {
				return err
			}
		default:
			if err := s.Skip(); err != nil {
				return err
			}
		}
	}
}

// phaseStrings holds every one-byte ASCII string, for phases.
var phaseStrings = func() (t [128]string) {
	for i := range t {
		t[i] = string(rune(i))
	}
	return t
}()

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

// args reads an event's args, keeping what profile and metadata events need.
func (p *parser) args() error {
	s := p.s
	e := &p.ev
	_, err := p.fields("", func(key []byte) (bool, error) {
		switch string(key) {
		case "name":
			c, err := s.Peek()
			if err != nil || c != '"' {
				return false, err
			}
			s.Pos++
			b, err := s.StrBytes()
			if err != nil {
				return true, err
			}
			e.argName, e.hasArgName = p.intern(b), true
			return true, nil
		case "data":
			return true, p.data()
		}
		return false, nil
	})
	return err
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

// data reads args.data.
func (p *parser) data() error {
	e := &p.ev
	ok, err := p.fields("", func(key []byte) (bool, error) {
		var err error
		switch string(key) {
		case "cpuProfile":
			return true, p.cpuProfile()
		case "timeDeltas":
			e.hasDeltas = true
			e.deltas, err = p.ints("args.data.timeDeltas", e.deltas)
			return true, err
		case "startTime", "endTime":
			return true, p.profileTime(string(key))
		}
		return false, nil
	})
	e.data = e.data || ok
	return err
}

func (p *parser) profileTime(key string) error {
	e := &p.ev
	s := p.s
	off := s.Off()
	c, err := s.Peek()
	if err != nil {
		return err
	}
	if c == '"' || c == '{' || c == '[' {
		p.typeError(fmt.Errorf("%s at offset %d: want a number, got %q", key, off, c))
		return s.Skip()
	}
	b, err := s.Value(s.Raw[:0], true)
	s.Raw = b
	if err != nil {
		return err
	}
	ns, err := parseNanos(b)
	if err != nil {
		p.typeError(fmt.Errorf("%s at offset %d: %w", key, off, err))
		return nil
	}
	us := ns / 1000
	if ns%1000 != 0 { // V8 writes whole µs; round others as v8.Parse does
		us = int64(math.Round(float64(ns) / 1000))
	}
	if key == "startTime" {
		e.startTime, e.hasStart = us, true
	} else {
		e.endTime, e.hasEnd = us, true
	}
	return nil
}

func (p *parser) typeError(err error) {
	if p.ev.typeErr == nil {
		p.ev.typeErr = err
	}
}

// cpuProfile reads args.data.cpuProfile.
func (p *parser) cpuProfile() error {
	e := &p.ev
	ok, err := p.fields("cpuProfile", func(key []byte) (bool, error) {
		var err error
		switch string(key) {
		case "nodes":
			return true, p.nodes()
		case "samples":
			e.hasSamples = true
			e.samples, err = p.ints("cpuProfile.samples", e.samples)
			return true, err
		case "timeDeltas":
			e.hasDeltas = true
			e.deltas, err = p.ints("cpuProfile.timeDeltas", e.deltas)
			return true, err
		case "startTime", "endTime":
			return true, p.profileTime(string(key))
		}
		return false, nil
	})
	e.cpuProfile = e.cpuProfile || ok
	return err
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

// nodes reads cpuProfile.nodes, one node at a time.
func (p *parser) nodes() error {
	s := p.s
	e := &p.ev
	c, err := s.Peek()
	if err != nil {
		return err
	}
	if c != '[' {
		p.typeError(fmt.Errorf("cpuProfile.nodes at offset %d: want an array, got %q", s.Off(), c))
		return s.Skip()
	}
	s.Pos++
	p.rawNode, err = s.Elements(p.rawNode, func(i int, off int64, raw []byte) error {
		n, err := v8.DecodeNode(raw, p.internString)
		if errors.Is(err, v8.ErrNoID) {
			p.typeError(fmt.Errorf("cpuProfile.nodes[%d] at offset %d has no id", i, off))
		} else if err != nil {
			p.typeError(fmt.Errorf("cpuProfile.nodes[%d] (offset %d): %w", i, off, err))
		} else {
			e.nodes = append(e.nodes, n)
		}
		return nil
	})
	return err
}
