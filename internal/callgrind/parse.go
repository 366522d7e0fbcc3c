package callgrind

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hotbudget/hotbudget/internal/membudget"
)

func (ps *parser) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	for sc.Scan() {
		ps.line++
		if ps.meter != nil && ps.line%1024 == 0 {
			if err := ps.meter.Err(); err != nil {
				return err
			}
		}
		if err := ps.parseLine(bytes.TrimRight(sc.Bytes(), "\r")); err != nil {
			return fmt.Errorf("line %d: %w", ps.line, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d: longer than %d bytes: %w", ps.line+1, MaxLineBytes, err)
		}
		return fmt.Errorf("line %d: %w", ps.line+1, err)
	}
	if ps.calls >= 0 {
		return fmt.Errorf("line %d: calls= line at the end of the file, with no cost line after it", ps.callsLine)
	}
	if ps.events == nil {
		return errors.New("no events: line: not callgrind output")
	}
	if ps.costLines == 0 {
		return errors.New("no cost lines")
	}
	return nil
}

func (ps *parser) parseLine(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 || line[0] == '#' {
		return nil
	}
	switch c := line[0]; {
	case c >= '0' && c <= '9' || c == '+' || c == '-' || c == '*':
		return ps.costLine(line)
	}
	if i := bytes.IndexByte(line, '='); i > 0 && isSpecKey(line[:i]) {
		if ps.calls >= 0 {
			return fmt.Errorf("%s line after the calls= line %d: want the cost line of the call", line[:i+1], ps.callsLine)
		}
		return ps.spec(string(line[:i]), line[i+1:])
	}
	if i := bytes.IndexByte(line, ':'); i > 0 && isWord(line[:i]) {
		if ps.calls >= 0 {
			return fmt.Errorf("%s: line after the calls= line %d: want the cost line of the call", line[:i], ps.callsLine)
		}
		return ps.header(string(line[:i]), strings.TrimSpace(string(line[i+1:])))
	}
	return fmt.Errorf("%q is neither a cost line, a position (fn=...) nor a header line (key: value)", truncate(line))
}

func isWord(b []byte) bool {
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func isSpecKey(b []byte) bool {
	switch string(b) {
	case "ob", "fl", "fi", "fe", "fn", "cob", "cfi", "cfl", "cfn", "calls", "jump", "jcnd", "jfi", "jfn":
		return true
	}
	return false
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

func (ps *parser) header(key, val string) error {
	switch key {
	case "version":
		f := strings.Fields(val)
		if len(f) == 0 {
			return errors.New("version: without a number")
		}
		major, _, _ := strings.Cut(f[0], ".")
		if v, err := strconv.Atoi(major); err != nil || v > 1 {
			return fmt.Errorf("version %q: only version 1 of the callgrind format is read", val)
		}
	case "creator":
		if ps.creator == "" {
			ps.creator = val
		}
	case "pid":
		if ps.pid == "" {
			ps.pid = val
		}
	case "cmd":
		if ps.cmd == "" {
			ps.cmd = val
		}
	case "thread":
		ps.setGroup(val)
	case "part":
		ps.resetPart()
		ps.parts++
		ps.pos = ps.pos[:0]
	case "positions":
		n := 0
		if ps.addr != nil {
			ps.addr.instr = -1
		}
		for _, w := range strings.Fields(val) {
			switch w {
			case "line", "instr", "addr", "bb":
				if ps.addr != nil && w == "instr" {
					ps.addr.instr = n
				}
				n++
			default:
				return fmt.Errorf("positions: %q: unknown subposition %q (want instr, line)", val, w)
			}
		}
		if n == 0 {
			return errors.New("positions: names no subposition")
		}
		ps.npos = n
		ps.pos = ps.pos[:0]
	case "events":
		return ps.setEvents(strings.Fields(val))
	case "totals":
		if ps.events != nil {
			ps.checkTotalsLine(val)
		}
	case "summary", "desc", "event":
		// summary: is not trusted (a later part's is garbage); desc: and
		// event: (long names, derived events) say nothing we use.
	default:
		ps.warn("line %d: header line %q ignored", ps.line, key+":")
	}
	return nil
}

func (ps *parser) setEvents(ev []string) error {
	if len(ev) == 0 {
		return errors.New("events: lists no event")
	}
	if ps.events == nil {
		seen := make(map[string]bool)
		for _, e := range ev {
			t := EventType(e)
			if seen[t] {
				return fmt.Errorf("events: %q lists %s twice", strings.Join(ev, " "), e)
			}
			seen[t] = true
		}
		ps.events, ps.nev = ev, len(ev)
		ps.costs = make([]int64, ps.nev)
	}
	if len(ev) != ps.nev {
		return fmt.Errorf("events: %q differs from the first part's %q", strings.Join(ev, " "), strings.Join(ps.events, " "))
	}
	ps.cols = make([]int, len(ev))
	for i, e := range ev {
		ps.cols[i] = -1
		for j, f := range ps.events {
			if e == f {
				ps.cols[i] = j
			}
		}
		if ps.cols[i] < 0 {
			return fmt.Errorf("events: %q differs from the first part's %q", strings.Join(ev, " "), strings.Join(ps.events, " "))
		}
	}
	if ps.partSelf == nil {
		ps.partSelf = make([]int64, ps.nev)
	}
	return nil
}

// resetPart starts the count of a new part's cost lines, which
// checkTotalsLine compares with its totals: line.
func (ps *parser) resetPart() {
	for i := range ps.partSelf {
		ps.partSelf[i] = 0
	}
}

// checkTotalsLine warns when a part's totals: differ from the sum of its
// cost lines.
func (ps *parser) checkTotalsLine(val string) {
	f := strings.Fields(val)
	for i, s := range f {
		if i >= len(ps.cols) {
			break
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			ps.warn("line %d: totals: %q is not a list of counts: ignored", ps.line, val)
			return
		}
		if e := ps.cols[i]; v != ps.partSelf[e] {
			ps.warn("line %d: totals: %s %d, but the part's cost lines add up to %d", ps.line, ps.events[e], v, ps.partSelf[e])
		}
	}
}

func (ps *parser) setGroup(thread string) {
	g, ok := ps.groupOf[thread]
	if !ok {
		g = &group{thread: thread, arcs: make(map[arcKey]int32), inline: make(map[arcKey]int32)}
		ps.groupOf[thread] = g
		ps.groups = append(ps.groups, g)
	}
	ps.g = g
}

// name reads a position name with name compression: "(id) name" defines
// id, "(id)" refers to it, anything else is the name itself.
func (ps *parser) name(tab int, b []byte) (string, error) {
	if len(b) >= 3 && b[0] == '(' && b[1] >= '0' && b[1] <= '9' {
		if i := bytes.IndexByte(b, ')'); i > 0 {
			id, err := strconv.ParseInt(string(b[1:i]), 10, 64)
			if err == nil {
				rest := bytes.TrimLeft(b[i+1:], " \t")
				if len(rest) == 0 {
					s, ok := ps.names[tab][id]
					if !ok {
						return "", fmt.Errorf("(%d) refers to no name defined before", id)
					}
					return s, nil
				}
				s := ps.str(rest)
				if _, ok := ps.names[tab][id]; !ok && ps.meter != nil {
					ps.meter.Add(membudget.Other, 1, 48)
				}
				ps.names[tab][id] = s
				return s, nil
			}
		}
	}
	return ps.str(b), nil
}

func (ps *parser) str(b []byte) string {
	if s, ok := ps.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	ps.intern[s] = s
	if ps.meter != nil {
		ps.meter.Add(membudget.String, 1, 2*membudget.StringCost(int64(len(s))))
	}
	return s
}

func (ps *parser) nodeID(file, fn, obj string) int32 {
	k := [2]string{file, fn}
	if id, ok := ps.nodeOf[k]; ok {
		if ps.nodes[id].obj == "" {
			ps.nodes[id].obj = obj
		}
		return id
	}
	id := int32(len(ps.nodes))
	ps.nodes = append(ps.nodes, node{file: file, fn: fn, obj: obj, parent: -1})
	ps.nodeOf[k] = id
	if ps.meter != nil {
		ps.meter.Add(membudget.Function, 1, membudget.CostFunction+membudget.CostLocation+membudget.CostLine+96)
	}
	return id
}

func (ps *parser) spec(key string, val []byte) error {
	switch key {
	case "ob", "cob":
		s, err := ps.name(tabObj, val)
		if err != nil {
			return fmt.Errorf("%s=: %w", key, err)
		}
		if key == "ob" {
			ps.obj = s
		} else {
			ps.cobj = s
		}
	case "fl", "fi", "fe":
		s, err := ps.name(tabFile, val)
		if err != nil {
			return fmt.Errorf("%s=: %w", key, err)
		}
		ps.file = s
		if key != "fl" {
			if ps.cur < 0 {
				return fmt.Errorf("%s= before any fn= line", key)
			}
			ps.cur = ps.nodeID(ps.file, ps.fn, ps.obj)
		}
	case "fn":
		s, err := ps.name(tabFn, val)
		if err != nil {
			return fmt.Errorf("fn=: %w", err)
		}
		if s == "" {
			return errors.New("fn= without a name")
		}
		ps.fn = s
		ps.cur = ps.nodeID(ps.file, ps.fn, ps.obj)
		ps.main = ps.cur
		if ps.addr != nil {
			ps.blockStart(s)
		}
	case "cfi", "cfl":
		s, err := ps.name(tabFile, val)
		if err != nil {
			return fmt.Errorf("%s=: %w", key, err)
		}
		ps.cfile, ps.hasCfile = s, true
	case "cfn":
		s, err := ps.name(tabFn, val)
		if err != nil {
			return fmt.Errorf("cfn=: %w", err)
		}
		if s == "" {
			return errors.New("cfn= without a name")
		}
		// As callgrind_annotate: cfi= names the file of the next cfn=
		// only; without it the callee is in the current file.
		file := ps.file
		if ps.hasCfile {
			file, ps.hasCfile = ps.cfile, false
		}
		ps.callee = ps.nodeID(file, s, ps.cobj)
	case "calls":
		f := strings.Fields(string(val))
		if len(f) == 0 {
			return errors.New("calls= without a count")
		}
		n, err := parseNumber(f[0])
		if err != nil {
			return fmt.Errorf("calls=%s: count %q is not a number", truncate(val), f[0])
		}
		if ps.cur < 0 {
			return errors.New("calls= before any fn= line")
		}
		if ps.callee < 0 {
			return errors.New("calls= before any cfn= line")
		}
		// The target position is relative to the last cost line's, and
		// does not move it: it is checked and dropped.
		if err := ps.positions(f[1:], false); err != nil {
			return fmt.Errorf("calls=: target %w", err)
		}
		if ps.addr != nil {
			if err := ps.callTarget(f[1:]); err != nil {
				return err
			}
		}
		ps.calls, ps.callsLine = n, ps.line
	case "jump", "jcnd":
		// Jumps (--collect-jumps=yes) carry no cost.
	case "jfi":
		if _, err := ps.name(tabFile, val); err != nil {
			return fmt.Errorf("jfi=: %w", err)
		}
	case "jfn":
		if _, err := ps.name(tabFn, val); err != nil {
			return fmt.Errorf("jfn=: %w", err)
		}
	}
	return nil
}

func parseNumber(s string) (int64, error) {
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		v, err := strconv.ParseUint(h, 16, 64)
		return int64(v), err
	}
	v, err := strconv.ParseUint(s, 10, 63)
	return int64(v), err
}

// positions reads subpositions, absolute or relative to the last cost
// line's; with move, they become the base of the next.
func (ps *parser) positions(f []string, move bool) error {
	if len(f) < ps.npos && move {
		return fmt.Errorf("position: %d subpositions, want %d", len(f), ps.npos)
	}
	for i := 0; i < ps.npos && i < len(f); i++ {
		v, err := ps.subposition(i, f[i])
		if err != nil {
			return err
		}
		if move {
			if i < len(ps.pos) {
				ps.pos[i] = v
			} else {
				ps.pos = append(ps.pos, v)
			}
		}
	}
	return nil
}

// subposition reads subposition i, s, absolute or relative to the last
// cost line's.
func (ps *parser) subposition(i int, s string) (int64, error) {
	var base int64
	if i < len(ps.pos) {
		base = ps.pos[i]
	}
	switch {
	case s == "*":
		return base, nil
	case s[0] == '+' || s[0] == '-':
		d, err := parseNumber(s[1:])
		if err != nil {
			return 0, fmt.Errorf("position %q is not a number", s)
		}
		if s[0] == '-' {
			d = -d
		}
		return base + d, nil
	}
	v, err := parseNumber(s)
	if err != nil {
		return 0, fmt.Errorf("position %q is not a number", s)
	}
	return v, nil
}

func (ps *parser) costLine(line []byte) error {
	if ps.events == nil {
		return errors.New("cost line before the events: header line")
	}
	if ps.cur < 0 {
		return errors.New("cost line before any fn= line")
	}
	f := strings.Fields(string(line))
	if err := ps.positions(f, true); err != nil {
		return err
	}
	f = f[min(ps.npos, len(f)):]
	if len(f) > ps.nev {
		return fmt.Errorf("%d costs, but the events: line names %d events", len(f), ps.nev)
	}
	for i := range ps.costs {
		ps.costs[i] = 0
	}
	for i, s := range f {
		v, err := strconv.ParseUint(s, 10, 63)
		if err != nil {
			if strings.HasPrefix(s, "0x") {
				v, err = strconv.ParseUint(s[2:], 16, 63)
			}
			if err != nil {
				return fmt.Errorf("cost %q is not a count", s)
			}
		}
		ps.costs[ps.cols[i]] = int64(v)
	}
	ps.costLines++
	if ps.g == nil {
		ps.setGroup("")
	}
	g := ps.g
	call := ps.calls >= 0
	ps.calls = -1
	if ps.addr != nil {
		if !call {
			if err := addTo(ps.partSelf, ps.costs); err != nil {
				return fmt.Errorf("the total cost: %w", err)
			}
		}
		return ps.addrCost(g, call)
	}
	if call {
		// The inclusive cost of a call. calls=0 is a call counted in an
		// earlier part and still running when this part was dumped: its
		// cost is the call's (callgrind_annotate, which reads one part,
		// takes it as self cost).
		if err := ps.addArc(g, arcKey{ps.cur, ps.callee}); err != nil {
			return err
		}
	} else {
		if err := ps.addSelf(g, ps.cur); err != nil {
			return err
		}
		if err := addTo(ps.partSelf, ps.costs); err != nil {
			return fmt.Errorf("the total cost: %w", err)
		}
	}
	if ps.cur != ps.main {
		return ps.addInline(g, arcKey{ps.main, ps.cur})
	}
	return nil
}

// slot returns the index of k in idx, adding k to keys and a zero cost per
// event to costs when it is new (added).
func (ps *parser) slot(idx map[arcKey]int32, keys *[]arcKey, costs *[]int64, k arcKey) (a int32, added bool) {
	if a, ok := idx[k]; ok {
		return a, false
	}
	a = int32(len(*keys))
	idx[k] = a
	*keys = append(*keys, k)
	*costs = append(*costs, make([]int64, ps.nev)...)
	return a, true
}

// addArc adds the line's costs to the calls of arc k.
func (ps *parser) addArc(g *group, k arcKey) error {
	a, added := ps.slot(g.arcs, &g.arcOf, &g.arcC, k)
	if added && ps.meter != nil {
		ps.meter.Add(membudget.Other, 1, 64+16*int64(ps.nev))
	}
	if err := addTo(g.arcC[int(a)*ps.nev:], ps.costs); err != nil {
		return fmt.Errorf("the calls from %s to %s: %w", ps.nodes[k.from].display(), ps.nodes[k.to].display(), err)
	}
	return nil
}

// addSelf adds the line's costs to the self cost of node n.
func (ps *parser) addSelf(g *group, n int32) error {
	need := (len(ps.nodes)) * ps.nev
	if len(g.self) < need {
		if ps.meter != nil {
			ps.meter.Add(membudget.Value, int64(need-len(g.self)), 8*int64(need-len(g.self)))
		}
		g.self = append(g.self, make([]int64, need-len(g.self))...)
	}
	if err := addTo(g.self[int(n)*ps.nev:], ps.costs); err != nil {
		return fmt.Errorf("the self cost of %s: %w", ps.nodes[n].display(), err)
	}
	g.hasSelf = true
	return nil
}

// addInline adds the line's costs to the cost of code k.to within code
// k.from (see group.inline).
func (ps *parser) addInline(g *group, k arcKey) error {
	a, _ := ps.slot(g.inline, &g.inlOf, &g.inlC, k)
	if err := addTo(g.inlC[int(a)*ps.nev:], ps.costs); err != nil {
		return fmt.Errorf("the cost of %s in %s: %w", ps.nodes[k.to].display(), ps.nodes[k.to].file, err)
	}
	return nil
}

// addTo adds v to dst, refusing sums beyond int64.
func addTo(dst, v []int64) error {
	for i, x := range v {
		if dst[i] > math.MaxInt64-x {
			return errors.New("costs add up to more than int64 holds")
		}
		dst[i] += x
	}
	return nil
}

// process names the program of cmd: its command's base name.
func process(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return ""
	}
	return filepath.Base(f[0])
}
