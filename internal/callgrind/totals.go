package callgrind

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
// carries as much (reparent). Cost still in the pool then is on no stack:
// the functions on its stacks are short of what they spent by it.

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
// its function, and takes that much from the piece.
func (b *builder) reparent() {
	for _, r := range b.roots {
		tried := 0
		for j := len(b.pool) - 1; j >= 0 && tried < maxCandidates; j-- {
			p := &b.pool[j]
			if p.amt < r.amt {
				continue
			}
			tried++
			if b.holds(p.path, r.path, b.steps[r.path].fn) {
				continue
			}
			b.steps[r.path].parent = p.path
			p.amt -= r.amt
			break
		}
		if b.work > maxWork {
			break
		}
	}
	b.roots = b.roots[:0]
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
