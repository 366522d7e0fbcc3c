package callgrind

import (
	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/membudget"
)

// Cost that callers' calls bring to a function and it does not spend, and
// cost a function spends that no call brought: where callgrind lost track
// of a Go program's calls (goroutine switches and stack growth, where the
// call that callgrind counts until it returns holds other goroutines'
// work, and code entered mid-body that callgrind takes for a call), a
// function's callers' calls carry other than it spends (its self cost and
// its calls). The builder puts on every function's stacks what it spends:
// the pieces its callers brought beyond that go to a pool with their
// stacks (the function left out), and what it spends beyond what they
// brought comes from the pool. As the functions are taken callers first,
// the pool may be empty when a function needs it and fill later: a
// function's self cost no call brought waits for the end of the event
// (late), and the calls it makes with cost no call brought start stacks of
// their own (root), which go, at the end, under a stack from the pool that
// carries as much, or are shared among several (reparent, split). Cost
// still in the pool then is on no stack: the functions on its stacks are
// short of what they spent by it.

// lateSelf is self cost of local node node that no call brought.
type lateSelf struct {
	node int32
	amt  int64
}

// root returns a new root step for local node m, whose stacks carry amt:
// a step of its own, that reparent may put under a stack from the pool.
func (b *builder) root(m int32, amt int64) int32 {
	b.work++
	b.steps = append(b.steps, step{b.glob[m], -1})
	s := int32(len(b.steps) - 1)
	b.roots = append(b.roots, piece{path: s, amt: amt})
	b.live++ // until the end of the event
	return s
}

// late meets the self cost no call brought with the pool's pieces whose
// stacks do not hold its function, puts the stacks no call brought under
// the pool's (reparent), and starts what is left on stacks of its own.
func (b *builder) late(e int, labels map[string][]string) error {
	for i := range b.deferred {
		d := &b.deferred[i]
		fn := b.glob[d.node]
		for len(b.pool) > 0 && b.pool[len(b.pool)-1].amt == 0 {
			b.pool = b.pool[:len(b.pool)-1]
		}
		tried := 0
		for j := len(b.pool) - 1; j >= 0 && d.amt > 0 && tried < maxCandidates; j-- {
			p := &b.pool[j]
			if p.amt == 0 {
				continue
			}
			if tried++; b.holds(p.path, -1, fn) {
				continue
			}
			amt := min(d.amt, p.amt)
			p.amt -= amt
			d.amt -= amt
			if err := b.reserve(0, 1); err != nil {
				return err
			}
			if err := b.sample(b.push(p.path, d.node), e, amt, labels); err != nil {
				return err
			}
		}
		if b.work > maxWork {
			return errWork
		}
	}
	if b.reparent(); b.work > maxWork {
		return errWork
	}
	for _, d := range b.deferred {
		if d.amt > 0 {
			if err := b.reserve(0, 1); err != nil {
				return err
			}
			if err := b.sample(b.push(-1, d.node), e, d.amt, labels); err != nil {
				return err
			}
		}
	}
	b.deferred = b.deferred[:0]
	return nil
}

// maxCandidates bounds the pool's pieces late and reparent try for a
// function's self cost or a root step (whose stacks they walk).
const maxCandidates = 64

// reparent puts each root step of the event under the stack of a piece of
// the pool that carries at least as much and holds neither that step nor
// its function, and takes that much from the piece; a root step no piece
// carries enough for is shared among several (b.splits: the samples under
// it are cut among their stacks when they are made), what they do not
// carry staying a stack of its own.
func (b *builder) reparent() {
	for _, r := range b.roots {
		fn := b.steps[r.path].fn
		tried := 0
		placed := false
		for j := len(b.pool) - 1; j >= 0 && tried < maxCandidates; j-- {
			p := &b.pool[j]
			if p.amt < r.amt {
				continue
			}
			tried++
			if b.holds(p.path, r.path, fn) {
				continue
			}
			b.steps[r.path].parent = p.path
			p.amt -= r.amt
			placed = true
			break
		}
		rest := r.amt
		var parts []piece
		for j, tried := len(b.pool)-1, 0; !placed && j >= 0 && rest > 0 && tried < maxCandidates; j-- {
			p := &b.pool[j]
			if p.amt == 0 {
				continue
			}
			if tried++; b.holds(p.path, r.path, fn) {
				continue
			}
			amt := min(rest, p.amt)
			parts = append(parts, piece{path: p.path, amt: amt})
			p.amt -= amt
			rest -= amt
		}
		if len(parts) > 0 {
			if b.splits == nil {
				b.splits = make(map[int32][]piece)
			}
			b.splits[r.path] = parts
		}
		if b.work > maxWork {
			break
		}
	}
	b.roots = b.roots[:0]
}

// split cuts sample s, whose stack (path) is under the root step top that
// reparent shared among stacks of the pool, among them: as much of its
// cost as each still takes goes on a sample of its own under that stack,
// the first on s; the rest stays on s, a stack of its own. It returns the
// prefix stack of s (-1: none) and the samples it made.
func (b *builder) split(s *profile.Sample, top int32) (prefix int32, more []*profile.Sample, prefixes []int32, err error) {
	parts := b.splits[top]
	e := -1
	for i, v := range s.Value {
		if v != 0 {
			if e >= 0 {
				return -1, nil, nil, nil // one event's cost only is under a root step
			}
			e = i
		}
	}
	prefix = -1
	v := s.Value[e]
	for len(parts) > 0 && v > 0 {
		p := &parts[0]
		x := min(v, p.amt)
		v -= x
		if p.amt -= x; p.amt == 0 {
			parts = parts[1:]
		}
		if prefix < 0 {
			prefix = p.path
			s.Value[e] = x
			continue
		}
		if err := b.ps.expand(membudget.Sample, 1, membudget.CostSample+64+int64(len(s.Value))*membudget.CostValue); err != nil {
			return -1, nil, nil, err
		}
		ns := &profile.Sample{Value: make([]int64, len(s.Value)), Label: s.Label}
		ns.Value[e] = x
		more = append(more, ns)
		prefixes = append(prefixes, p.path)
	}
	b.splits[top] = parts
	if v > 0 && prefix >= 0 {
		// What the stacks of the pool do not take: on a stack of its own.
		if err := b.ps.expand(membudget.Sample, 1, membudget.CostSample+64+int64(len(s.Value))*membudget.CostValue); err != nil {
			return -1, nil, nil, err
		}
		ns := &profile.Sample{Value: make([]int64, len(s.Value)), Label: s.Label}
		ns.Value[e] = v
		more = append(more, ns)
		prefixes = append(prefixes, -1)
	}
	return prefix, more, prefixes, nil
}

// holds reports whether the stack of step s holds step t or the parser's
// node fn.
func (b *builder) holds(s, t, fn int32) bool {
	for ; s >= 0; s = b.steps[s].parent {
		b.work++
		if s == t || b.steps[s].fn == fn {
			return true
		}
	}
	return false
}

// stacks makes the stacks of the samples of the group.
func (b *builder) stacks() error {
	for _, path := range b.stackless {
		s := b.sampleOf[path]
		top := path
		for t := path; t >= 0; t = b.steps[t].parent {
			top = t
		}
		prefix := int32(-1)
		var more []*profile.Sample
		var prefixes []int32
		if len(b.splits[top]) > 0 {
			var err error
			if prefix, more, prefixes, err = b.split(s, top); err != nil {
				return err
			}
		}
		if err := b.stack(s, path, prefix); err != nil {
			return err
		}
		for i, ns := range more {
			if err := b.stack(ns, path, prefixes[i]); err != nil {
				return err
			}
			b.p.Sample = append(b.p.Sample, ns)
		}
	}
	b.stackless = b.stackless[:0]
	b.splits = nil
	return nil
}

// stack sets the stack of sample s: the frames of path, then of prefix.
func (b *builder) stack(s *profile.Sample, path, prefix int32) error {
	depth := 0
	for _, p := range [2]int32{path, prefix} {
		for t := p; t >= 0; t = b.steps[t].parent {
			depth++
		}
	}
	if b.work += int64(depth); b.work > maxWork {
		return errWork
	}
	if err := b.ps.expand(membudget.Sample, 0, int64(depth)*membudget.CostLocationID); err != nil {
		return err
	}
	stack := make([]*profile.Location, 0, depth)
	for _, p := range [2]int32{path, prefix} {
		for t := p; t >= 0; t = b.steps[t].parent {
			stack = append(stack, b.location(b.steps[t].fn))
		}
	}
	s.Location = stack
	return nil
}
