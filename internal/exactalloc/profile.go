package exactalloc

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/callgrind"
)

// Counts says what Read counted.
type Counts struct {
	// Objects is every allocation of the dump.
	Objects int64
	// Bytes is true when every allocation's size was known (the
	// allocators' names gave it): the profile's alloc_space is exact.
	// Otherwise alloc_space is 0 throughout.
	Bytes bool
	// Shared is the allocations of compiled functions whose call sites
	// into the allocating chain are in several functions inlined into
	// them: shared among those by their calls.
	Shared int64
	// Std is the allocations whose chain of Depth callers named only the
	// runtime's and the standard library's functions: on the chain's
	// stack, its innermost function as their leaf.
	Std int64
	// Resumed is the allocations of functions that callgrind saw resumed
	// after a stack switch (their entry's stack check called
	// runtime.morestack: the runtime grew the stack or preempted the
	// goroutine), whose chain of callers it lost: charged through the
	// callers of their calls of morestack (Args keeps them), shared by
	// those calls when several chains called it.
	Resumed int64
	// Contexts is the number of mallocgc's contexts in the dump.
	Contexts int
	// Misses is, by function, how many times its code called the
	// runtime's type-assertion and type-switch miss paths (MissPaths):
	// the function at each call site, the innermost inlined one, whose
	// own count holds the generated code that probed the cache first.
	Misses map[string]int64
}

// Read reads a callgrind dump of a Go program that ran with Args (malloc:
// MallocName of the program, the first of Args's results) and returns its allocations as an
// allocation profile, sample types alloc_objects/count and
// alloc_space/bytes, Period 1 (exact): each allocation on a stack whose
// leaf is the function charged with it (the innermost function, inlined
// ones included, outside the runtime and the standard library), then the
// functions that called it, as far as the chain of callers goes. sym
// names the dump's addresses (inlined frames after the compiled
// function), as callgrind.ParseByAddress's symbolizer does; nil keeps
// callgrind's names and charges compiled functions.
func Read(r io.Reader, malloc string, sym callgrind.Symbolizer) (*profile.Profile, Counts, error) {
	var c Counts
	d, err := scan(r, sym)
	if err != nil {
		return nil, c, fmt.Errorf("exactalloc: %w", err)
	}
	c.Misses = d.misses(sym)
	c.Bytes = true
	for _, key := range d.order {
		ch := d.chains[key]
		c.Objects += ch.objects
		if ch.unsized > 0 {
			c.Bytes = false
		}
		if ch.context {
			c.Contexts++
		}
	}
	if c.Objects > 0 && c.Contexts == 0 {
		return nil, c, fmt.Errorf("exactalloc: %w", ErrNoContexts)
	}
	b := newBuilder()
	mallocFn := resolveName(sym, malloc)
	resumedBy := d.reentriesByFunc(sym)
	charge := func(chain []string, alloc string, objects, bytes int64) {
		at := slices.IndexFunc(chain, func(n string) bool { return !IsStd(n) })
		if at < 0 {
			c.Std += objects
			if len(chain) > 1 && chain[0] == mallocFn {
				chain = chain[1:] // the innermost function that called mallocgc
			}
			b.add(chain, objects, bytes)
			return
		}
		callee := alloc
		if at > 0 {
			callee = chain[at-1]
		}
		shares := inlineShares(d.arcs[[2]string{chain[at], callee}], sym, chain[at])
		if len(shares) > 1 {
			c.Shared += objects
		}
		objs := split(objects, shares)
		bs := split(bytes, shares)
		for i, s := range shares {
			b.add(append(slices.Clone(s.frames), chain[at+1:]...), objs[i], bs[i])
		}
	}
	for _, key := range d.order {
		ch := d.chains[key]
		if ch.objects == 0 {
			continue
		}
		chain := resolveChain(sym, ch.callers) // callers of the allocator, innermost first
		if chains, weights := d.repair(chain, resumedBy); chains != nil {
			c.Resumed += ch.objects
			if len(chains) > 1 {
				c.Shared += ch.objects
			}
			objs, bs := split(ch.objects, weights), split(ch.bytes, weights)
			for i, rc := range chains {
				charge(rc, ch.alloc, objs[i], bs[i])
			}
			continue
		}
		charge(chain, ch.alloc, ch.objects, ch.bytes)
	}
	p := b.p
	if !c.Bytes {
		for _, s := range p.Sample {
			s.Value[1] = 0
		}
	}
	return p, c, nil
}

// share is the calls of the sites of a compiled function whose code is
// one chain of inlined functions: frames innermost first, ending with the
// compiled function.
type share struct {
	frames []string
	calls  int64
}

// inlineShares groups the call sites of compiled function phys by the
// function charged at each: the innermost frame there outside the
// standard library (functions of the standard library inlined into phys
// allocate for it). No site known: phys alone.
func inlineShares(sites []site, sym callgrind.Symbolizer, phys string) []share {
	var out []share
	for _, s := range sites {
		frames := []string{phys}
		if sym != nil {
			if fr, ok := sym(s.addr); ok && len(fr) > 0 {
				j := len(fr) - 1
				for j > 0 && IsStd(fr[j].Func) {
					j--
				}
				frames = frames[:0]
				for k := j; k >= 0; k-- {
					frames = append(frames, fr[k].Func)
				}
			}
		}
		i := slices.IndexFunc(out, func(x share) bool { return slices.Equal(x.frames, frames) })
		if i < 0 {
			out = append(out, share{frames: frames})
			i = len(out) - 1
		}
		out[i].calls += s.calls
	}
	if len(out) == 0 {
		return []share{{frames: []string{phys}, calls: 1}}
	}
	// Sites never called (calls=0, written for calls still running at a
	// dump) carry no share.
	kept := out[:0]
	for _, s := range out {
		if s.calls > 0 {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return out[:1]
	}
	return kept
}

// split divides n among shares by their calls, by largest remainders, so
// that the parts add up to n.
func split(n int64, shares []share) []int64 {
	out := make([]int64, len(shares))
	if len(shares) == 1 {
		out[0] = n
		return out
	}
	var total int64
	for _, s := range shares {
		total += s.calls
	}
	if total <= 0 {
		out[0] = n
		return out
	}
	rem := make([]int64, len(shares))
	var given int64
	for i, s := range shares {
		out[i] = n * s.calls / total
		rem[i] = n * s.calls % total
		given += out[i]
	}
	for given < n {
		best := 0
		for i := range rem {
			if rem[i] > rem[best] {
				best = i
			}
		}
		out[best]++
		rem[best] = -1
		given++
	}
	return out
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// builder makes the allocation profile.
type builder struct {
	p      *profile.Profile
	locs   map[string]*profile.Location
	sample map[string]*profile.Sample
}

func newBuilder() *builder {
	return &builder{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}},
			PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
			Period:     1,
		},
		locs:   map[string]*profile.Location{},
		sample: map[string]*profile.Sample{},
	}
}

// add adds objects and bytes on the stack of frames, leaf first.
func (b *builder) add(frames []string, objects, bytes int64) {
	if objects == 0 && bytes == 0 || len(frames) == 0 {
		return
	}
	key := strings.Join(frames, "\x00")
	if s := b.sample[key]; s != nil {
		s.Value[0] += objects
		s.Value[1] += bytes
		return
	}
	s := &profile.Sample{Value: []int64{objects, bytes}}
	for _, name := range frames {
		l := b.locs[name]
		if l == nil {
			f := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name}
			b.p.Function = append(b.p.Function, f)
			l = &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: f}}}
			b.p.Location = append(b.p.Location, l)
			b.locs[name] = l
		}
		s.Location = append(s.Location, l)
	}
	b.sample[key] = s
	b.p.Sample = append(b.p.Sample, s)
}

// ReadFile is Read of the dump at path.
func ReadFile(path, malloc string, sym callgrind.Symbolizer) (*profile.Profile, Counts, error) {
	f, err := openDump(path)
	if err != nil {
		return nil, Counts{}, err
	}
	defer f.Close()
	p, c, err := Read(f, malloc, sym)
	if err != nil {
		return nil, c, fmt.Errorf("%s: %w", path, err)
	}
	return p, c, nil
}
