package chrometrace

import (
	"fmt"
	"math"
	"slices"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// thread holds the duration events of one (pid, tid).
type thread struct {
	pid, tid string
	evs      []durEv
	last     int64 // latest time seen (ns), for closing B events left open
	hasLast  bool
}

type durEv struct {
	ts   int64 // ns
	end  int64 // X: ts+dur
	kind byte  // 'B', 'E' or 'X'
	name string
	seq  int32
}

func key2(a, b string) string { return a + "\x00" + b }

func (p *parser) thread(pid, tid string) *thread {
	return p.threads.get(pid, tid, func() *thread { return &thread{pid: pid, tid: tid} })
}

// registry keeps values by a two-part key, in the order they were made.
type registry[T any] struct {
	byKey map[string]*T
	order []*T
}

// get returns the value of key (a, b), making it with mk if there is none.
func (r *registry[T]) get(a, b string, mk func() *T) *T {
	k := key2(a, b)
	if v, ok := r.byKey[k]; ok {
		return v
	}
	if r.byKey == nil {
		r.byKey = map[string]*T{}
	}
	v := mk()
	r.byKey[k] = v
	r.order = append(r.order, v)
	return v
}

// dispatch files the event just read.
func (p *parser) dispatch(i int, off int64) error {
	e := &p.ev
	switch {
	case e.ph == "P" && e.name == "Profile":
		return p.profileHead()
	case e.ph == "P" && e.name == "ProfileChunk":
		return p.profileChunk()
	case e.name == "CpuProfile" && e.cpuProfile:
		return p.oldProfile(i)
	}
	switch e.ph {
	case "X", "B", "E":
		return p.duration(i)
	case "M":
		if !e.hasArgName {
			return nil
		}
		switch e.name {
		case "process_name":
			p.procs[e.pid] = e.argName
		case "thread_name":
			p.names[key2(e.pid, e.tid)] = e.argName
		}
	case "I", "i", "R", "C", "b", "e", "n", "s", "t", "f", "N", "O", "D", "S", "T", "F", "p", "P", "c", "(", ")", "V", "v":
		// Instant, counter, async, flow, object, sample, context, mark and
		// memory-dump events: no time.
	default:
		if !p.phases[e.ph] && len(p.phases) < 20 {
			p.phases[e.ph] = true
			p.warnf("events with unknown phase %q ignored (first: event %d at offset %d)", e.ph, i, off)
		}
	}
	return nil
}

// duration records an X, B or E event.
func (p *parser) duration(i int) error {
	e := &p.ev
	if !e.hasTs {
		p.warnf("%s event %q without ts dropped", e.ph, e.name)
		return nil
	}
	d := durEv{ts: e.ts, kind: e.ph[0], name: e.name}
	end := e.ts
	if d.kind == 'X' {
		switch {
		case !e.hasDur:
			p.warnf("X events without dur dropped (unfinished when the trace was saved?)")
			return nil
		case e.dur < 0:
			p.warnf("X event %q with negative dur dropped", e.name)
			return nil
		}
		d.end = e.ts + e.dur
		if d.end < e.ts {
			return fmt.Errorf("ts+dur overflows")
		}
		end = d.end
	}
	p.durCount++
	if p.dropDur {
		return nil
	}
	t := p.thread(e.pid, e.tid)
	if len(t.evs) >= math.MaxInt32 {
		return fmt.Errorf("too many events on thread %s/%s", e.pid, e.tid)
	}
	d.seq = int32(len(t.evs))
	t.evs = append(t.evs, d)
	if !t.hasLast || end > t.last {
		t.last, t.hasLast = end, true
	}
	return nil
}

// frame is an open duration on a thread's stack.
type frame struct {
	name   string
	end    int64 // X: its end; B: math.MaxInt64 (unknown)
	minEnd int64 // min of end over this frame and all below it
	loc    *profile.Location
}

// sweep turns one thread's events into exact self times.
type sweep struct {
	b      *pbuild.Builder
	t      *thread
	labels pbuild.Labels
	stack  []frame
	leaf   []*profile.Location // scratch, leaf first
	now    int64
	min    int64 // earliest time, for the duration
	clips  int
}

const open = math.MaxInt64

func (w *sweep) advance(t int64) {
	if t > w.now && len(w.stack) > 0 {
		w.add(0, t-w.now)
	}
	if t > w.now {
		w.now = t
	}
}

func (w *sweep) add(count, nanos int64) {
	w.leaf = w.leaf[:0]
	for i := len(w.stack) - 1; i >= 0; i-- {
		w.leaf = append(w.leaf, w.stack[i].loc)
	}
	w.b.Add(w.leaf, count, nanos, w.labels)
}

func (w *sweep) push(name string, end int64) error {
	if len(w.stack) >= MaxDepth {
		return fmt.Errorf("thread pid %s tid %s: duration events nest deeper than %d", w.t.pid, w.t.tid, MaxDepth)
	}
	if name == "" {
		name = "(unnamed)"
	}
	f := frame{name: name, end: end, minEnd: end, loc: w.b.Location(pbuild.Frame{Name: name})}
	if n := len(w.stack); n > 0 {
		f.minEnd = min(end, w.stack[n-1].minEnd)
	}
	w.stack = append(w.stack, f)
	return nil
}

// pop closes the top frame at the current time.
func (w *sweep) pop() {
	w.add(1, 0)
	w.stack = w.stack[:len(w.stack)-1]
}

// closeTo closes frames above and including index j at time now; frames
// above j that would have lasted longer are clipped.
func (w *sweep) closeTo(j int, why string) {
	for len(w.stack)-1 > j {
		top := w.stack[len(w.stack)-1]
		if top.end != w.now {
			w.clips++
			if w.clips <= 3 {
				w.b.Warnf("thread pid %s tid %s: %q open past the end of %q: clipped at %dns (%s)", w.t.pid, w.t.tid, top.name, w.stack[j].name, w.now, why)
			}
		}
		w.pop()
	}
	w.pop()
}

// closeEnded closes X frames that ended before t, in order of their ends.
func (w *sweep) closeEnded(t int64) {
	for len(w.stack) > 0 {
		e := w.stack[len(w.stack)-1].minEnd
		if e >= t {
			return
		}
		w.advance(e)
		j := len(w.stack) - 1
		for j > 0 && w.stack[j-1].minEnd == e {
			j--
		}
		w.closeTo(j, "child overlaps its parent")
	}
}

// run sweeps the thread's events in time order (stable: equal times keep
// file order) a timestamp at a time:
//  1. X frames that ended before it close;
//  2. E events that match the top frame (same name, or no name) close it,
//     and so do X frames ending now;
//  3. an E event that names a B open deeper in the stack closes it and the
//     frames above it (clipped, with a warning);
//  4. B and X events begin, the longest first (B counts as longest);
//  5. step 2 again (zero-length events), then step 3; E events still
//     left match no open B and are ignored with a warning.
func (w *sweep) run() error {
	evs := w.t.evs
	slices.SortStableFunc(evs, func(a, b durEv) int {
		switch {
		case a.ts < b.ts:
			return -1
		case a.ts > b.ts:
			return 1
		}
		return 0
	})
	w.min = evs[0].ts
	w.now = evs[0].ts
	var ends []durEv
	var begins []durEv
	for lo := 0; lo < len(evs); {
		T := evs[lo].ts
		hi := lo
		ends, begins = ends[:0], begins[:0]
		for ; hi < len(evs) && evs[hi].ts == T; hi++ {
			if evs[hi].kind == 'E' {
				ends = append(ends, evs[hi])
			} else {
				begins = append(begins, evs[hi])
			}
		}
		lo = hi
		w.closeEnded(T)
		w.advance(T)
		ends = w.matchEnds(ends)
		ends = w.closeDeeper(ends, false)
		slices.SortStableFunc(begins, func(a, b durEv) int {
			ea, eb := a.end, b.end
			if a.kind == 'B' {
				ea = open
			}
			if b.kind == 'B' {
				eb = open
			}
			switch {
			case ea > eb:
				return -1
			case ea < eb:
				return 1
			}
			return 0
		})
		for _, d := range begins {
			end := d.end
			if d.kind == 'B' {
				end = open
			}
			if err := w.push(d.name, end); err != nil {
				return err
			}
		}
		ends = w.matchEnds(ends)
		w.closeDeeper(ends, true)
	}
	w.closeEnded(open)
	if n := len(w.stack); n > 0 {
		last := w.t.last
		w.advance(last)
		w.b.Warnf("thread pid %s tid %s: %d B events never end (innermost %q): closed at the thread's last timestamp %dns", w.t.pid, w.t.tid, n, w.stack[n-1].name, last)
		for len(w.stack) > 0 {
			w.pop()
		}
	}
	return nil
}

// closeDeeper handles E events that match no top frame: one that names
// an open B deeper in the stack closes it and the frames above it, with a
// warning. The others are returned, or ignored with a warning when final.
func (w *sweep) closeDeeper(ends []durEv, final bool) []durEv {
	var left []durEv
	for _, d := range ends {
		j := -1
		for k := len(w.stack) - 1; k >= 0; k-- {
			if w.stack[k].end == open && (d.name == "" || w.stack[k].name == d.name) {
				j = k
				break
			}
		}
		if j < 0 {
			if final {
				w.b.Warnf("thread pid %s tid %s: E event %q at %dns matches no open B event: ignored", w.t.pid, w.t.tid, d.name, w.now)
			} else {
				left = append(left, d)
			}
			continue
		}
		if j < len(w.stack)-1 {
			w.b.Warnf("thread pid %s tid %s: E event %q at %dns closes %d events opened after its B", w.t.pid, w.t.tid, d.name, w.now, len(w.stack)-1-j)
		}
		w.closeTo(j, "closed by the E of an outer B")
		w.matchEnds(nil)
	}
	return left
}

// matchEnds pops the top frame while it is an X frame ending now or a B
// frame that one of ends closes, and returns the ends not used.
func (w *sweep) matchEnds(ends []durEv) []durEv {
	for len(w.stack) > 0 {
		top := &w.stack[len(w.stack)-1]
		if top.end == w.now {
			w.pop()
			continue
		}
		if top.end != open {
			break
		}
		k := slices.IndexFunc(ends, func(d durEv) bool { return d.name == "" || d.name == top.name })
		if k < 0 {
			break
		}
		ends = slices.Delete(ends, k, k+1)
		w.pop()
	}
	return ends
}
