package chrometrace

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/hotbudget/hotbudget/internal/pbuild"
	v8 "github.com/hotbudget/hotbudget/internal/v8"
)

// hermes holds the top-level samples and stackFrames that Hermes (React
// Native) and Chrome's old sampling writer put beside traceEvents.
type hermes struct {
	samples []hermesSample
	frames  map[string]hermesFrame
	order   []string // frame keys in file order
}

type hermesSample struct {
	pid, tid string
	ts       int64 // µs
	sf       string
	weight   int64
}

type hermesFrame struct {
	name   string
	parent string
	hasPar bool
}

func (p *parser) hermesData() *hermes {
	if p.hermes == nil {
		p.hermes = &hermes{frames: map[string]hermesFrame{}}
	}
	return p.hermes
}

// hermesSamples reads the top-level samples array.
func (p *parser) hermesSamples() error {
	s := p.s
	h := p.hermesData()
	if err := s.Expect('[', "'[' to start samples"); err != nil {
		return err
	}
	_, err := s.Elements(nil, func(i int, off int64, raw []byte) error {
		var js struct {
			PID, TID, TS, SF, Weight v8.StringOrNumber
		}
		if err := json.Unmarshal(raw, &js); err != nil {
			return fmt.Errorf("samples[%d] at offset %d: %w", i, off, err)
		}
		ns, err := parseNanos([]byte(js.TS))
		if err != nil {
			return fmt.Errorf("samples[%d] at offset %d: ts: %w", i, off, err)
		}
		w := int64(1)
		if js.Weight != "" {
			if w, err = strconv.ParseInt(string(js.Weight), 10, 64); err != nil || w < 0 {
				return fmt.Errorf("samples[%d] at offset %d: bad weight %.20q", i, off, js.Weight)
			}
		}
		h.samples = append(h.samples, hermesSample{
			pid: p.intern([]byte(js.PID)), tid: p.intern([]byte(js.TID)),
			ts: ns / 1000, sf: p.intern([]byte(js.SF)), weight: w,
		})
		return nil
	})
	return err
}

// stackFrames reads the top-level stackFrames object.
func (p *parser) stackFrames() error {
	s := p.s
	h := p.hermesData()
	if err := s.Expect('{', "'{' to start stackFrames"); err != nil {
		return err
	}
	var raw []byte
	for first := true; ; first = false {
		key, end, err := s.ObjectKey(first)
		if err != nil {
			return err
		}
		if end {
			return nil
		}
		off := s.Off()
		if raw, err = s.Value(raw[:0], true); err != nil {
			return err
		}
		var jf struct {
			Name   string
			Parent *v8.StringOrNumber
		}
		if err := json.Unmarshal(raw, &jf); err != nil {
			return fmt.Errorf("stackFrames[%q] at offset %d: %w", key, off, err)
		}
		f := hermesFrame{name: jf.Name}
		if jf.Parent != nil {
			f.parent, f.hasPar = string(*jf.Parent), true
		}
		if _, dup := h.frames[key]; !dup {
			h.order = append(h.order, key)
		}
		h.frames[key] = f
	}
}

// build adds the samples, one V8-style profile per (pid, tid): a frame is
// a node, parentless frames hang from a synthetic (root), and a sample
// lasts until the next one on its thread.
func (h *hermes) build(b *pbuild.Builder, p *parser) (v8.Span, error) {
	if len(h.samples) == 0 {
		return v8.Span{}, nil
	}
	index := make(map[string]int64, len(h.order))
	nodes := []v8.Node{{ID: 0, CallFrame: v8.CallFrame{FunctionName: v8.RootName, LineNumber: -1, ColumnNumber: -1}}}
	for i, k := range h.order {
		index[k] = int64(i + 1)
	}
	for i, k := range h.order {
		f := h.frames[k]
		n := v8.Node{ID: int64(i + 1), HasParent: true, CallFrame: v8.CallFrame{FunctionName: f.name, LineNumber: -1, ColumnNumber: -1}}
		if f.hasPar {
			j, ok := index[f.parent]
			if !ok {
				return v8.Span{}, fmt.Errorf("stackFrames[%q] has unknown parent %q", k, f.parent)
			}
			n.Parent = j
		}
		nodes = append(nodes, n)
	}
	type tk struct{ pid, tid string }
	byThread := map[tk]*v8.Profile{}
	var order []tk
	weighted := false
	for i, s := range h.samples {
		id, ok := index[s.sf]
		if !ok {
			return v8.Span{}, fmt.Errorf("samples[%d] names unknown stack frame %q", i, s.sf)
		}
		k := tk{s.pid, s.tid}
		vp := byThread[k]
		if vp == nil {
			vp = &v8.Profile{Nodes: nodes}
			byThread[k] = vp
			order = append(order, k)
		}
		if s.weight != 1 {
			weighted = true
		}
		vp.Samples = append(vp.Samples, id)
		vp.Timestamps = append(vp.Timestamps, s.ts)
	}
	if weighted {
		b.Warnf("sample weights other than 1 are ignored: a sample lasts until the next one")
	}
	var all v8.Span
	for i, k := range order {
		span, err := v8.Build(b, byThread[k], p.labels(k.pid, k.tid, ""))
		if err != nil {
			return v8.Span{}, fmt.Errorf("samples of pid %s tid %s: %w", k.pid, k.tid, err)
		}
		if i == 0 {
			all = span
			continue
		}
		all.Samples += span.Samples
		all.Start, all.End = min(all.Start, span.Start), max(all.End, span.End)
		all.Nanos = (all.End - all.Start) * 1000
	}
	return all, nil
}
