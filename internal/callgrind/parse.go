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
		// The caller's meter is fed by its reader; the own meter bounds
		// the memory by the input read too.
		if err := ps.own.Read(len(sc.Bytes()) + 1); err != nil {
			return fmt.Errorf("line %d: %w", ps.line, err)
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
	if ps.pending {
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
		if ps.pending {
			return fmt.Errorf("%s line after the calls= line %d: want the cost line of the call", line[:i+1], ps.callsLine)
		}
		return ps.spec(string(line[:i]), line[i+1:])
	}
	if i := bytes.IndexByte(line, ':'); i > 0 && isWord(line[:i]) {
		if ps.pending {
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
		return ps.setGroup(val)
	case "part":
		ps.resetPart()
		ps.parts++
		ps.pos = ps.pos[:0]
	case "positions":
		n := 0
		if ps.addr != nil {
			ps.addr.instr = -1
		}
		f, ok := ps.fields([]byte(val), 4)
		if !ok {
			return fmt.Errorf("positions: %q: more than 4 subpositions", truncate([]byte(val)))
		}
		for _, b := range f {
			w := string(b)
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
		// Each event costs a column of every table: charged before the
		// line is split.
		n := int64(len(bytes.Fields([]byte(val))))
		if ps.events == nil {
			if err := ps.charge(membudget.Event, n, n*128); err != nil {
				return err
			}
		}
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
	}
	if len(ev) != ps.nev {
		return fmt.Errorf("events: %q differs from the first part's %q", strings.Join(ev, " "), strings.Join(ps.events, " "))
	}
	ps.cols = make([]int, len(ev))
	index := make(map[string]int, len(ev))
	for j, f := range ps.events {
		index[f] = j
	}
	for i, e := range ev {
		j, ok := index[e]
		if !ok {
			return fmt.Errorf("events: %q differs from the first part's %q", strings.Join(ev, " "), strings.Join(ps.events, " "))
		}
		if j < 0 {
			return fmt.Errorf("events: %q lists %s twice", strings.Join(ev, " "), e)
		}
		ps.cols[i], index[e] = j, -1
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
	f, _ := ps.fields([]byte(val), len(ps.cols))
	for i, b := range f {
		v, err := parseCount(b)
		if err != nil {
			ps.warn("line %d: totals: %q is not a list of counts: ignored", ps.line, val)
			return
		}
		if e := ps.cols[i]; v != ps.partSelf[e] {
			ps.warn("line %d: totals: %s %d, but the part's cost lines add up to %d", ps.line, ps.events[e], v, ps.partSelf[e])
		}
	}
}

func (ps *parser) setGroup(thread string) error {
	g, ok := ps.groupOf[thread]
	if !ok {
		if err := ps.charge(membudget.Other, 1, 512+membudget.StringCost(int64(len(thread)))); err != nil {
			return err
		}
		g = &group{thread: thread, selfIdx: make(map[arcKey]int32), arcs: make(map[arcKey]int32), inline: make(map[arcKey]int32)}
		ps.groupOf[thread] = g
		ps.groups = append(ps.groups, g)
	}
	ps.g = g
	return nil
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
				s, err := ps.str(rest)
				if err != nil {
					return "", err
				}
				if _, ok := ps.names[tab][id]; !ok {
					if err := ps.charge(membudget.Other, 1, 48); err != nil {
						return "", err
					}
				}
				ps.names[tab][id] = s
				return s, nil
			}
		}
	}
	return ps.str(b)
}

// str interns b, charged before it is copied.
func (ps *parser) str(b []byte) (string, error) {
	if s, ok := ps.intern[string(b)]; ok {
		return s, nil
	}
	if err := ps.charge(membudget.String, 1, 2*membudget.StringCost(int64(len(b)))); err != nil {
		return "", err
	}
	s := string(b)
	ps.intern[s] = s
	return s, nil
}

// nodeID returns the node of (file, fn), made and charged (with the
// location and function the builder makes of it) on first use.
func (ps *parser) nodeID(file, fn, obj string) (int32, error) {
	k := [2]string{file, fn}
	if id, ok := ps.nodeOf[k]; ok {
		if ps.nodes[id].obj == "" {
			ps.nodes[id].obj = obj
		}
		return id, nil
	}
	if len(ps.nodes) >= math.MaxInt32 {
		return -1, errors.New("more than 2^31 functions")
	}
	if err := ps.charge(membudget.Function, 1, membudget.CostFunction+membudget.CostLocation+membudget.CostLine+96); err != nil {
		return -1, err
	}
	id := int32(len(ps.nodes))
	ps.nodes = append(ps.nodes, node{file: file, fn: fn, obj: obj, parent: -1})
	ps.nodeOf[k] = id
	return id, nil
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
			if ps.cur, err = ps.nodeID(ps.file, ps.fn, ps.obj); err != nil {
				return err
			}
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
		if ps.cur, err = ps.nodeID(ps.file, ps.fn, ps.obj); err != nil {
			return err
		}
		ps.main = ps.cur
		if ps.addr != nil {
			return ps.blockStart(s)
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
		if ps.callee, err = ps.nodeID(file, s, ps.cobj); err != nil {
			return err
		}
	case "calls":
		// The count and the target's subpositions; more is ignored.
		f, _ := ps.fields(val, 1+ps.npos)
		if len(f) == 0 {
			return errors.New("calls= without a count")
		}
		// The count is only checked: a call's cost is its cost line's.
		if _, err := parseCount(f[0]); err != nil {
			return fmt.Errorf("calls=%s: count %q is not a count (0 to 2^63-1, decimal or 0x hex)", truncate(val), truncate(f[0]))
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
		ps.pending, ps.callsLine = true, ps.line
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

// parseCount reads a count, decimal or hex ("0x1f"), from 0 to
// math.MaxInt64 in either base.
func parseCount(b []byte) (int64, error) {
	base := 10
	if h, ok := bytes.CutPrefix(b, []byte("0x")); ok {
		b, base = h, 16
	}
	v, err := strconv.ParseUint(string(b), base, 63)
	return int64(v), err
}

// parsePosition reads a subposition, decimal or hex: any 64 bits (an
// address), kept as an int64 whose arithmetic wraps as the address's does.
func parsePosition(b []byte) (int64, error) {
	base := 10
	if h, ok := bytes.CutPrefix(b, []byte("0x")); ok {
		b, base = h, 16
	}
	v, err := strconv.ParseUint(string(b), base, 64)
	return int64(v), err
}

// fields splits line at blanks into ps.tok (reused): at most max fields,
// ok false when there are more.
func (ps *parser) fields(line []byte, max int) (f [][]byte, ok bool) {
	ps.tok = ps.tok[:0]
	for i := 0; i < len(line); {
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		j := i
		for j < len(line) && !isBlank(line[j]) {
			j++
		}
		if len(ps.tok) == max {
			return ps.tok, false
		}
		ps.tok = append(ps.tok, line[i:j])
		i = j
	}
	return ps.tok, true
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'
}

// positions reads subpositions, absolute or relative to the last cost
// line's; with move, they become the base of the next.
func (ps *parser) positions(f [][]byte, move bool) error {
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
func (ps *parser) subposition(i int, s []byte) (int64, error) {
	var base int64
	if i < len(ps.pos) {
		base = ps.pos[i]
	}
	switch {
	case len(s) == 1 && s[0] == '*':
		return base, nil
	case s[0] == '+' || s[0] == '-':
		d, err := parsePosition(s[1:])
		if err != nil {
			return 0, fmt.Errorf("position %q is not a number", s)
		}
		if s[0] == '-' {
			d = -d
		}
		return base + d, nil
	}
	v, err := parsePosition(s)
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
	f, ok := ps.fields(line, ps.npos+ps.nev+1)
	if err := ps.positions(f, true); err != nil {
		return err
	}
	f = f[min(ps.npos, len(f)):]
	if !ok {
		return fmt.Errorf("more than %d costs, but the events: line names %d events", len(f), ps.nev)
	}
	if len(f) > ps.nev {
		return fmt.Errorf("%d costs, but the events: line names %d events", len(f), ps.nev)
	}
	// The line's costs, of the first len(f) columns: a line touches
	// what it names, not every event.
	ps.vals = ps.vals[:0]
	for _, s := range f {
		v, err := parseCount(s)
		if err != nil {
			return fmt.Errorf("cost %q is not a count", truncate(s))
		}
		ps.vals = append(ps.vals, v)
	}
	ps.costLines++
	if ps.g == nil {
		if err := ps.setGroup(""); err != nil {
			return err
		}
	}
	g := ps.g
	call := ps.pending
	ps.pending = false
	if ps.addr != nil {
		if !call {
			if err := ps.addLine(ps.partSelf); err != nil {
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
		if err := ps.addLine(ps.partSelf); err != nil {
			return fmt.Errorf("the total cost: %w", err)
		}
	}
	if ps.cur != ps.main {
		return ps.addInline(g, arcKey{ps.main, ps.cur})
	}
	return nil
}

// slot returns the index of k in idx, adding k to keys and a zero cost per
// event to costs when it is new. What it allocates is charged before: the
// key, and each array of costs as the slice doubles (so that the arrays
// left to the collector are charged too).
func (ps *parser) slot(idx map[arcKey]int32, keys *[]arcKey, costs *[]int64, k arcKey) (int32, error) {
	if a, ok := idx[k]; ok {
		return a, nil
	}
	if err := ps.charge(membudget.Other, 1, costSlot+16); err != nil {
		return -1, err
	}
	if n := len(*costs) + ps.nev; n > cap(*costs) {
		n = max(n, 2*cap(*costs), 64)
		if err := ps.charge(membudget.Value, int64(n), 8*int64(n)); err != nil {
			return -1, err
		}
		c := make([]int64, len(*costs), n)
		copy(c, *costs)
		*costs = c
	}
	a := int32(len(*keys))
	idx[k] = a
	*keys = append(*keys, k)
	*costs = (*costs)[:len(*costs)+ps.nev]
	clear((*costs)[len(*costs)-ps.nev:])
	return a, nil
}

// addArc adds the line's costs to the calls of arc k.
func (ps *parser) addArc(g *group, k arcKey) error {
	a, err := ps.slot(g.arcs, &g.arcOf, &g.arcC, k)
	if err != nil {
		return err
	}
	if err := ps.addLine(g.arcC[int(a)*ps.nev:]); err != nil {
		return fmt.Errorf("the calls from %s to %s: %w", ps.nodes[k.from].display(), ps.nodes[k.to].display(), err)
	}
	return nil
}

// addSelf adds the line's costs to the self cost of node n.
func (ps *parser) addSelf(g *group, n int32) error {
	a, err := ps.slot(g.selfIdx, &g.selfOf, &g.selfC, arcKey{n, n})
	if err != nil {
		return err
	}
	if err := ps.addLine(g.selfC[int(a)*ps.nev:]); err != nil {
		return fmt.Errorf("the self cost of %s: %w", ps.nodes[n].display(), err)
	}
	return nil
}

// addInline adds the line's costs to the cost of code k.to within code
// k.from (see group.inline).
func (ps *parser) addInline(g *group, k arcKey) error {
	a, err := ps.slot(g.inline, &g.inlOf, &g.inlC, k)
	if err != nil {
		return err
	}
	if err := ps.addLine(g.inlC[int(a)*ps.nev:]); err != nil {
		return fmt.Errorf("the cost of %s in %s: %w", ps.nodes[k.to].display(), ps.nodes[k.to].file, err)
	}
	return nil
}

// addLine adds the current cost line's costs to dst (by event),
// refusing sums beyond int64.
func (ps *parser) addLine(dst []int64) error {
	for i, x := range ps.vals {
		e := ps.cols[i]
		if dst[e] > math.MaxInt64-x {
			return errors.New("costs add up to more than int64 holds")
		}
		dst[e] += x
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
