package chrometrace

import (
	"errors"
	"fmt"
	"math"

	v8 "github.com/hotbudget/hotbudget/internal/v8"
)

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
