package chrometrace

import (
	"errors"
	"fmt"
	"io"

	"github.com/hotbudget/hotbudget/internal/jsonscan"

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
