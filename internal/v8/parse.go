package v8

import (
	"errors"
	"fmt"
	"github.com/hotbudget/hotbudget/internal/jsonscan"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// Format is the format name Parse records in the profile.
const Format = "cpuprofile"

// Parse reads a V8 CPU profile: the modern layout (nodes, startTime,
// endTime, samples, timeDeltas), the legacy one (a nested head tree with
// absolute timestamps and 1-based lines) or either wrapped as
// {"profile": {...}} as the DevTools protocol's Profiler.stop returns it.
//
// The input is streamed: integer arrays are scanned number by number, nodes
// are decoded one at a time, the legacy tree is walked token by token
// without recursion.
// When o.Name's base name is Node's CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile,
// samples get pid, tid and seq labels. See Build for how samples are counted.
func Parse(r io.Reader, o pbuild.Options) (*profile.Profile, error) {
	p, legacy, err := read(r, o.Meter)
	if err != nil {
		return nil, err
	}
	b := pbuild.New(pbuild.Sampled)
	b.SetMeter(o.Meter)
	b.PrepaidLocations()
	if legacy {
		b.Warnf("legacy V8 profile layout (head tree and timestamps)")
	}
	span, err := Build(b, p, FileLabels(o.Name))
	if err != nil {
		return nil, err
	}
	return b.Finish(Format, span.Period, span.Nanos)
}

// FileLabels returns pid, tid and seq labels when name's base name has the
// form Node gives --cpu-prof output, CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile,
// and nil otherwise.
func FileLabels(name string) pbuild.Labels {
	if name == "" {
		return nil
	}
	parts := strings.Split(filepath.Base(name), ".")
	if len(parts) != 7 || parts[0] != "CPU" || parts[6] != "cpuprofile" {
		return nil
	}
	for _, s := range parts[1:6] {
		if !isDigits(s) {
			return nil
		}
	}
	return pbuild.NewLabels(pbuild.LabelPID, parts[3], pbuild.LabelTID, parts[4], pbuild.LabelSeq, parts[5])
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// reader reads one profile from a scanner.
type reader struct {
	s      *jsonscan.Scanner
	p      Profile
	legacy bool
	// legacy start and end, in seconds
	legacyStart, legacyEnd float64
	hasNodes               bool
	legacyParent           []int // legacy: index of each node's parent, -1 for the head
	seen                   map[string]bool
	meter                  *membudget.Meter
}

// Read decodes a V8 CPU profile without building samples. legacy reports
// whether the input used the legacy head/timestamps layout, which Read
// converts: lines and columns become 0-based, parents are set from the
// nesting and Timestamps holds the sample times.
func Read(r io.Reader) (p *Profile, legacy bool, err error) { return read(r, nil) }

// read is Read charging m, when not nil, for each node as it is read:
// the node and what Build makes of it besides the Builder's own charges.
func read(r io.Reader, m *membudget.Meter) (p *Profile, legacy bool, err error) {
	rd := &reader{s: jsonscan.New(r), seen: map[string]bool{}, meter: m}
	c, err := rd.s.Peek()
	if errors.Is(err, jsonscan.ErrEOF) { // nothing but white space

		return nil, false, errors.New("empty input")
	}
	if err != nil {
		return nil, false, err
	}
	if c != '{' {
		return nil, false, fmt.Errorf("at offset %d: want a JSON object, got %q", rd.s.Off(), c)
	}
	_, _ = rd.s.ReadByte()
	if err := rd.object(true); err != nil {
		return nil, false, err
	}
	if !rd.hasNodes {
		return nil, false, errors.New("no nodes: neither a nodes array nor a head tree (not a V8 CPU profile?)")
	}
	if rd.legacy && len(rd.p.Timestamps) == 0 {
		s, e := rd.legacyStart*1e6, rd.legacyEnd*1e6
		if math.Abs(s) < 1<<62 && math.Abs(e) < 1<<62 {
			rd.p.StartTime, rd.p.EndTime = int64(math.Round(s)), int64(math.Round(e))
		}
	}
	if rd.legacy && len(rd.p.Timestamps) > 0 {
		rd.p.StartTime = rd.p.Timestamps[0]
		rd.p.EndTime = rd.p.Timestamps[len(rd.p.Timestamps)-1]
	}
	return &rd.p, rd.legacy, nil
}

// object reads the keys of the profile object whose '{' was just read.
func (rd *reader) object(top bool) error {
	s := rd.s
	for first := true; ; first = false {
		key, end, err := s.ObjectKey(first)
		if err != nil {
			return err
		}
		if end {
			return nil
		}
		switch key {
		case "nodes", "head", "samples", "timeDeltas", "timestamps":
			if rd.seen[key] || (key == "nodes" || key == "head") && rd.hasNodes {
				return fmt.Errorf("at offset %d: a second %s key", s.Off(), key)
			}
			rd.seen[key] = true
		}
		switch key {
		case "nodes":
			rd.hasNodes = true
			if err := rd.nodes(); err != nil {
				return err
			}
		case "head":
			rd.hasNodes, rd.legacy = true, true
			if err := rd.head(); err != nil {
				return err
			}
		case "samples":
			if rd.p.Samples, err = s.IntsHint(key, len(rd.p.TimeDeltas)); err != nil {
				return err
			}
		case "timeDeltas":
			// As long as samples, when they came first: read in one piece.
			if rd.p.TimeDeltas, err = s.IntsHint(key, len(rd.p.Samples)); err != nil {
				return err
			}
		case "timestamps":
			if rd.p.Timestamps, err = s.Ints(key); err != nil {
				return err
			}
		case "startTime", "endTime":
			off := s.Off()
			n, err := s.Scalar(key)
			if err != nil {
				return err
			}
			f, _ := strconv.ParseFloat(n, 64)
			i, err := jsonscan.ToInt(n)
			if err != nil {
				return fmt.Errorf("%s at offset %d: %w", key, off, err)
			}
			if key == "startTime" {
				rd.p.StartTime, rd.legacyStart = i, f
			} else {
				rd.p.EndTime, rd.legacyEnd = i, f
			}
		case "profile":
			if c, err := s.Peek(); err != nil {
				return err
			} else if !top || c != '{' {
				if _, err := s.Value(nil, false); err != nil {
					return err
				}
				continue
			}
			_, _ = s.ReadByte()
			if err := rd.object(false); err != nil {
				return err
			}
		default:
			if _, err := s.Value(nil, false); err != nil {
				return err
			}
		}
	}
}

// nodes reads the modern nodes array, one node at a time.
func (rd *reader) nodes() error {
	s := rd.s
	if err := s.Expect('[', "'[' to start nodes"); err != nil {
		return err
	}
	_, err := s.Elements(nil, func(i int, off int64, raw []byte) error {
		n, err := DecodeNode(raw, nil)
		if errors.Is(err, ErrNoID) {
			return fmt.Errorf("nodes[%d] at offset %d has no id", i, off)
		} else if err != nil {
			return fmt.Errorf("nodes[%d] (offset %d): %w", i, off, err)
		}
		rd.p.Nodes = append(rd.p.Nodes, n)
		rd.charge(&n)
		return nil
	})
	return err
}

// costNode is the charge of a node besides its strings: Node (a CallFrame
// of three strings and two numbers, an id, a parent, children, a hit
// count) with the spare capacity of Nodes; per node in Build, the entry
// of the id map, the parent, state and location slices; and the location
// and function the Builder makes of it (Parse tells the Builder they are
// paid for).
const costNode = 2*128 + 64 + 600

// charge charges the meter for node n.
func (rd *reader) charge(n *Node) {
	if rd.meter != nil {
		cf := &n.CallFrame
		rd.meter.Add(membudget.Node, 1, costNode+8*int64(cap(n.Children))+
			3*int64(len(cf.FunctionName)+len(cf.ScriptID)+len(cf.URL)))
	}
}

// head flattens the legacy nested tree without recursion: each node's
// parent is the node whose children array holds it.
func (rd *reader) head() error {
	s := rd.s
	if err := s.Expect('{', "'{' to start head"); err != nil {
		return err
	}
	type level struct {
		node  int  // index in rd.p.Nodes
		hasID bool // an id key was seen
		first bool // no key read yet
	}
	stack := []level{{node: rd.newLegacyNode(-1), first: true}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		key, end, err := s.ObjectKey(top.first)
		if err != nil {
			return err
		}
		top.first = false
		if end {
			if !top.hasID {
				return fmt.Errorf("head: node at depth %d ending at offset %d has no id", len(stack)-1, s.Off())
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				rd.linkLegacy()
				return nil
			}
			// Back in the parent's children array: another child or its end.
			end, err := s.ArrayNext(false)
			if err != nil {
				return err
			}
			if !end {
				if err := s.Expect('{', "'{' (a child node)"); err != nil {
					return err
				}
				stack = append(stack, level{node: rd.newLegacyNode(stack[len(stack)-1].node), first: true})
			}
			continue
		}
		nd := &rd.p.Nodes[top.node]
		switch key {
		case "children":
			if err := s.Expect('[', "'[' to start children"); err != nil {
				return err
			}
			end, err := s.ArrayNext(true)
			if err != nil {
				return err
			}
			if end {
				continue
			}
			if err := s.Expect('{', "'{' (a child node)"); err != nil {
				return err
			}
			stack = append(stack, level{node: rd.newLegacyNode(top.node), first: true})
		case "id", "hitCount", "lineNumber", "columnNumber":
			off := s.Off()
			n, err := s.Scalar("head " + key)
			if err != nil {
				return err
			}
			v, err := jsonscan.ToInt(n)
			if err != nil {
				return fmt.Errorf("head %s at offset %d: %w", key, off, err)
			}
			switch key {
			case "id":
				nd.ID, top.hasID = v, true
			case "hitCount":
				nd.HitCount = v
			case "lineNumber": // 1-based in this layout
				nd.CallFrame.LineNumber = max(v, 0) - 1
			case "columnNumber":
				nd.CallFrame.ColumnNumber = max(v, 0) - 1
			}
		case "functionName", "url", "scriptId":
			c, err := s.Peek()
			if err != nil {
				return err
			}
			var str string
			if c == '"' {
				_, _ = s.ReadByte()
				if str, err = s.StringBody(); err != nil {
					return err
				}
			} else {
				off := s.Off()
				if str, err = s.Scalar("head " + key); err != nil {
					return err
				}
				if str == "null" {
					str = ""
				} else if _, err := strconv.ParseFloat(str, 64); err != nil {
					return fmt.Errorf("head %s at offset %d: want a string, got %.40s", key, off, str)
				}
			}
			switch key {
			case "functionName":
				nd.CallFrame.FunctionName = str
			case "url":
				nd.CallFrame.URL = str
			default:
				nd.CallFrame.ScriptID = str
			}
		default:
			if _, err := s.Value(nil, false); err != nil {
				return err
			}
		}
	}
	return nil
}

func (rd *reader) newLegacyNode(parent int) int {
	rd.p.Nodes = append(rd.p.Nodes, Node{CallFrame: CallFrame{LineNumber: -1, ColumnNumber: -1}})
	rd.legacyParent = append(rd.legacyParent, parent)
	rd.charge(&rd.p.Nodes[len(rd.p.Nodes)-1]) // its strings are not read yet: charged per byte of input
	return len(rd.p.Nodes) - 1
}

// linkLegacy sets parents once all ids are known (an id may follow children).
func (rd *reader) linkLegacy() {
	for i, j := range rd.legacyParent {
		if j >= 0 {
			rd.p.Nodes[i].Parent, rd.p.Nodes[i].HasParent = rd.p.Nodes[j].ID, true
		}
	}
	rd.legacyParent = nil
}
