package exactalloc

import (
	"slices"
	"strings"

	"github.com/hotbudget/hotbudget/internal/callgrind"
)

// Callgrind follows a program's calls on a shadow stack, which it unwinds
// when the stack pointer moves above its frames. A Go function whose
// prologue finds its stack too small, or a preemption request of the
// runtime's sysmon (which it delivers through the same check), calls
// runtime.morestack: the goroutine's stack is switched (grown, or the
// goroutine rescheduled), and the function is resumed by a jump to its
// entry. Callgrind takes the jump for a call from whatever its unwound
// shadow stack holds (runtime.mcall, runtime.gopark and the like), so
// that the allocations of that activation of the function carry a chain
// of callers that is not theirs. What the function was called from is
// still in the dump: callgrind kept the contexts of morestack too (Args),
// "runtime.morestack_noctxt'F'X'Y...", the callers of the activation that
// called it.

// Morestack is the prefix of the runtime's stack check functions
// (runtime.morestack, runtime.morestack_noctxt), whose callers Args has
// callgrind keep apart.
const Morestack = "runtime.morestack"

// isMorestack reports whether the function named name is one of the
// runtime's stack check functions.
func isMorestack(name string) bool { return strings.HasPrefix(name, Morestack) }

// reentry is a call of morestack: its chain of callers as callgrind names
// them, innermost first (the function that called it, then that one's
// callers), and how many times.
type reentry struct {
	callers []string
	calls   int64
}

// addReentry records calls of a morestack context named cfn.
func (d *dump) addReentry(cfn string, calls int64) {
	parts := strings.Split(cfn, "'")
	if len(parts) < 3 || calls <= 0 {
		return // no context: who called the function is not known
	}
	d.reentries = append(d.reentries, reentry{callers: parts[1:], calls: calls})
}

// resumed is a chain of callers that replaces a broken one's, and the
// calls of morestack it stands for.
type resumed struct {
	callers []string // after the resumed function, innermost first
	calls   int64
}

// reentriesByFunc resolves the calls of morestack by the function that
// made them.
func (d *dump) reentriesByFunc(sym callgrind.Symbolizer) map[string][]resumed {
	out := map[string][]resumed{}
	for _, r := range d.reentries {
		chain := resolveChain(sym, r.callers)
		if len(chain) < 2 {
			continue
		}
		f, callers := chain[0], chain[1:]
		i := slices.IndexFunc(out[f], func(x resumed) bool { return slices.Equal(x.callers, callers) })
		if i < 0 {
			out[f] = append(out[f], resumed{callers: callers})
			i = len(out[f]) - 1
		}
		out[f][i].calls += r.calls
	}
	return out
}

// resolveChain resolves callgrind's names of a chain of callers, innermost
// first, leaving out recursion levels (--separate-recs: "F'2", which a
// chain of F's callers begins with when F is mallocgc or an allocator).
func resolveChain(sym callgrind.Symbolizer, parts []string) []string {
	var chain []string
	for _, part := range parts {
		if isDigits(part) {
			continue
		}
		chain = append(chain, resolveName(sym, part))
	}
	return chain
}

// brokenAt returns the index of the first function of chain (callers,
// innermost first) whose next one never calls it in the dump: the chain
// is not its callers' beyond that function. -1: every link is a call.
func (d *dump) brokenAt(chain []string) int {
	for i := 0; i+1 < len(chain); i++ {
		if len(d.arcs[[2]string{chain[i+1], chain[i]}]) == 0 {
			return i
		}
	}
	return -1
}

// repair returns the chains that replace chain, and their weights (calls
// of morestack), when the chain breaks before any function outside the
// standard library at a function resumed after a stack switch, whose
// calls of morestack name its callers; else nil.
func (d *dump) repair(chain []string, resumedBy map[string][]resumed) ([][]string, []share) {
	b := d.brokenAt(chain)
	if b < 0 || slices.ContainsFunc(chain[:b+1], func(n string) bool { return !IsStd(n) }) {
		return nil, nil
	}
	rs := resumedBy[chain[b]]
	if len(rs) == 0 {
		return nil, nil
	}
	chains := make([][]string, len(rs))
	weights := make([]share, len(rs))
	for i, r := range rs {
		c := append(slices.Clip(chain[:b+1]), r.callers...)
		chains[i] = c[:min(len(c), len(chain))] // no deeper than callgrind's chains

		weights[i] = share{calls: r.calls}
	}
	return chains, weights
}
