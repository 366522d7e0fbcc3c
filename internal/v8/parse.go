package v8

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// Format is the format name Parse records in the profile.
const Format = "cpuprofile"

// Parse reads a V8 CPU profile: the modern layout (nodes, startTime,
// endTime, samples, timeDeltas), the legacy one (a nested head tree with
// absolute timestamps and 1-based lines) or either wrapped as
// {"profile": {...}} as the DevTools protocol's Profiler.stop returns it.
//
// The input is read as a stream of JSON values: nodes one at a time, the
// number arrays whole, the legacy tree token by token without recursion.
// When o.Name's base name is Node's CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile,
// samples get pid, tid and seq labels. See Build for how samples are counted.
func Parse(r io.Reader, o pbuild.Options) (*profile.Profile, error) {
	p, legacy, err := Read(r)
	if err != nil {
		return nil, err
	}
	b := pbuild.New(pbuild.Sampled)
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

// reader walks the JSON tokens of one profile.
type reader struct {
	d      *json.Decoder
	p      Profile
	legacy bool
	// legacy start and end, in seconds
	legacyStart, legacyEnd float64
	hasNodes               bool
	legacyParent           []int // legacy: index of each node's parent, -1 for the head
}

// Read decodes a V8 CPU profile without building samples. legacy reports
// whether the input used the legacy head/timestamps layout, which Read
// converts: lines and columns become 0-based, parents are set from the
// nesting and Timestamps holds the sample times.
func Read(r io.Reader) (p *Profile, legacy bool, err error) {
	rd := &reader{d: json.NewDecoder(r)}
	rd.d.UseNumber()
	tok, err := rd.d.Token()
	if err == io.EOF {
		return nil, false, errors.New("empty input")
	}
	if err != nil {
		return nil, false, rd.wrap("reading the top-level object", err)
	}
	if tok != json.Delim('{') {
		return nil, false, fmt.Errorf("at offset %d: want a JSON object, got %v", rd.d.InputOffset(), tok)
	}
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

func (rd *reader) wrap(what string, err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s: unexpected end of input at offset %d (truncated file?)", what, rd.d.InputOffset())
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%s: invalid JSON at offset %d: %w", what, se.Offset, err)
	}
	return fmt.Errorf("%s at offset %d: %w", what, rd.d.InputOffset(), err)
}

// object reads the keys of the profile object whose '{' was just read.
func (rd *reader) object(top bool) error {
	d := rd.d
	for {
		tok, err := d.Token()
		if err != nil {
			return rd.wrap("reading the profile's keys", err)
		}
		if tok == json.Delim('}') {
			return nil
		}
		key, _ := tok.(string)
		switch key {
		case "nodes":
			if rd.hasNodes {
				return fmt.Errorf("at offset %d: a second nodes or head key", d.InputOffset())
			}
			rd.hasNodes = true
			if err := rd.nodes(); err != nil {
				return err
			}
		case "head":
			if rd.hasNodes {
				return fmt.Errorf("at offset %d: a second nodes or head key", d.InputOffset())
			}
			rd.hasNodes, rd.legacy = true, true
			if err := rd.head(); err != nil {
				return err
			}
		case "samples":
			if err := rd.ints(key, &rd.p.Samples); err != nil {
				return err
			}
		case "timeDeltas":
			if err := rd.ints(key, &rd.p.TimeDeltas); err != nil {
				return err
			}
		case "timestamps":
			if err := rd.ints(key, &rd.p.Timestamps); err != nil {
				return err
			}
		case "startTime", "endTime":
			n, err := rd.number(key)
			if err != nil {
				return err
			}
			f, _ := n.Float64()
			i, err := toInt(n)
			if key == "startTime" {
				rd.p.StartTime, rd.legacyStart = i, f
			} else {
				rd.p.EndTime, rd.legacyEnd = i, f
			}
			if err != nil {
				return fmt.Errorf("%s at offset %d: %w", key, d.InputOffset(), err)
			}
		case "profile":
			if !top {
				if err := rd.skip(); err != nil {
					return err
				}
				continue
			}
			tok, err := d.Token()
			if err != nil {
				return rd.wrap("reading profile", err)
			}
			if tok != json.Delim('{') {
				return fmt.Errorf("at offset %d: profile: want an object, got %v", d.InputOffset(), tok)
			}
			if err := rd.object(false); err != nil {
				return err
			}
		default:
			if err := rd.skip(); err != nil {
				return err
			}
		}
	}
}

// toInt converts a JSON number to int64, rounding fractions; out of range is an error.
func toInt(n json.Number) (int64, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsNaN(f) || f >= math.MaxInt64 || f <= math.MinInt64 {
		return 0, fmt.Errorf("number %s out of range", n)
	}
	return int64(math.Round(f)), nil
}

func (rd *reader) number(key string) (json.Number, error) {
	tok, err := rd.d.Token()
	if err != nil {
		return "", rd.wrap(key, err)
	}
	n, ok := tok.(json.Number)
	if !ok {
		return "", fmt.Errorf("%s at offset %d: want a number, got %v", key, rd.d.InputOffset(), tok)
	}
	return n, nil
}

// skip skips one value, token by token (bounded memory at any depth).
func (rd *reader) skip() error {
	depth := 0
	for {
		tok, err := rd.d.Token()
		if err != nil {
			return rd.wrap("skipping a value", err)
		}
		switch tok {
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

// ints reads an array of integers.
func (rd *reader) ints(key string, dst *[]int64) error {
	off := rd.d.InputOffset()
	var v []int64
	if err := rd.d.Decode(&v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s at offset %d: want integers, got %s (out of range or not an integer)", key, te.Offset, te.Value)
		}
		return rd.wrap(key+" (array starting at offset "+strconv.FormatInt(off, 10)+")", err)
	}
	if *dst != nil {
		return fmt.Errorf("%s at offset %d: key given twice", key, off)
	}
	if v == nil {
		v = []int64{}
	}
	*dst = v
	return nil
}

type jsonNode struct {
	ID        *int64        `json:"id"`
	CallFrame jsonCallFrame `json:"callFrame"`
	Parent    *int64        `json:"parent"`
	Children  []int64       `json:"children"`
	HitCount  int64         `json:"hitCount"`
}

type jsonCallFrame struct {
	FunctionName string   `json:"functionName"`
	ScriptID     scriptID `json:"scriptId"`
	URL          string   `json:"url"`
	LineNumber   *int64   `json:"lineNumber"`
	ColumnNumber *int64   `json:"columnNumber"`
}

// scriptID accepts a string or a number.
type scriptID string

func (s *scriptID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = scriptID(v)
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	if _, err := strconv.ParseFloat(string(b), 64); err != nil {
		return fmt.Errorf("scriptId %.20s is neither a string nor a number", b)
	}
	*s = scriptID(b)
	return nil
}

func orMinus1(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// nodes reads the modern nodes array, one node at a time.
func (rd *reader) nodes() error {
	d := rd.d
	tok, err := d.Token()
	if err != nil {
		return rd.wrap("nodes", err)
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("nodes at offset %d: want an array, got %v", d.InputOffset(), tok)
	}
	for i := 0; d.More(); i++ {
		off := d.InputOffset()
		var jn jsonNode
		if err := d.Decode(&jn); err != nil {
			return rd.wrap(fmt.Sprintf("nodes[%d] (offset %d)", i, off), err)
		}
		if jn.ID == nil {
			return fmt.Errorf("nodes[%d] at offset %d has no id", i, off)
		}
		n := Node{
			ID:       *jn.ID,
			Children: jn.Children,
			HitCount: jn.HitCount,
			CallFrame: CallFrame{
				FunctionName: jn.CallFrame.FunctionName,
				ScriptID:     string(jn.CallFrame.ScriptID),
				URL:          jn.CallFrame.URL,
				LineNumber:   orMinus1(jn.CallFrame.LineNumber),
				ColumnNumber: orMinus1(jn.CallFrame.ColumnNumber),
			},
		}
		if jn.Parent != nil {
			n.Parent, n.HasParent = *jn.Parent, true
		}
		rd.p.Nodes = append(rd.p.Nodes, n)
	}
	if _, err := d.Token(); err != nil { // ']'
		return rd.wrap("nodes", err)
	}
	return nil
}

// head flattens the legacy nested tree without recursion: each node's
// parent is the node whose children array holds it.
func (rd *reader) head() error {
	d := rd.d
	tok, err := d.Token()
	if err != nil {
		return rd.wrap("head", err)
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("head at offset %d: want an object, got %v", d.InputOffset(), tok)
	}
	type level struct {
		node  int  // index in rd.p.Nodes
		hasID bool // an id key was seen
	}
	stack := []level{{node: rd.newLegacyNode(-1)}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		tok, err := d.Token()
		if err != nil {
			return rd.wrap("head", err)
		}
		if tok == json.Delim('}') {
			if !top.hasID {
				return fmt.Errorf("head: node at depth %d ending at offset %d has no id", len(stack)-1, d.InputOffset())
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				rd.linkLegacy()
				return nil
			}
			// Back in the parent's children array: another child or its end.
			for {
				tok, err := d.Token()
				if err != nil {
					return rd.wrap("head children", err)
				}
				if tok == json.Delim(']') {
					break
				}
				if tok != json.Delim('{') {
					return fmt.Errorf("head children at offset %d: want an object, got %v", d.InputOffset(), tok)
				}
				parent := stack[len(stack)-1].node
				stack = append(stack, level{node: rd.newLegacyNode(parent)})
				break
			}
			continue
		}
		key, _ := tok.(string)
		nd := &rd.p.Nodes[top.node]
		switch key {
		case "children":
			tok, err := d.Token()
			if err != nil {
				return rd.wrap("head children", err)
			}
			if tok != json.Delim('[') {
				return fmt.Errorf("head children at offset %d: want an array, got %v", d.InputOffset(), tok)
			}
			tok, err = d.Token()
			if err != nil {
				return rd.wrap("head children", err)
			}
			if tok == json.Delim(']') {
				continue
			}
			if tok != json.Delim('{') {
				return fmt.Errorf("head children at offset %d: want an object, got %v", d.InputOffset(), tok)
			}
			stack = append(stack, level{node: rd.newLegacyNode(top.node)})
		case "id", "hitCount", "lineNumber", "columnNumber":
			n, err := rd.number("head " + key)
			if err != nil {
				return err
			}
			v, err := toInt(n)
			if err != nil {
				return fmt.Errorf("head %s at offset %d: %w", key, d.InputOffset(), err)
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
			tok, err := d.Token()
			if err != nil {
				return rd.wrap("head "+key, err)
			}
			var s string
			switch v := tok.(type) {
			case string:
				s = v
			case json.Number:
				s = string(v)
			case nil:
			default:
				return fmt.Errorf("head %s at offset %d: want a string, got %v", key, d.InputOffset(), tok)
			}
			switch key {
			case "functionName":
				nd.CallFrame.FunctionName = s
			case "url":
				nd.CallFrame.URL = s
			default:
				nd.CallFrame.ScriptID = s
			}
		default:
			if err := rd.skip(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (rd *reader) newLegacyNode(parent int) int {
	rd.p.Nodes = append(rd.p.Nodes, Node{CallFrame: CallFrame{LineNumber: -1, ColumnNumber: -1}})
	rd.legacyParent = append(rd.legacyParent, parent)
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
