package exactalloc

import (
	"slices"

	"github.com/hotbudget/hotbudget/internal/callgrind"
)

// MissPaths are the runtime's functions that a type assertion to an
// interface, and a type switch with interface cases, call when their
// call site's cache has no entry for the value's type. The runtime adds
// an entry on about one miss in 1,024 (runtime/iface.go: "Only bother
// updating the cache ~1 in 1000 times"), chosen by a per-process random
// state, and never for an assertion that fails: how many times a
// function's code probes its caches and misses, and so how many
// instructions its own count holds, differs from process to process.
var MissPaths = []string{"runtime.typeAssert", "runtime.interfaceSwitch"}

// misses counts the calls into MissPaths by the function at each call
// site: the innermost function sym names there (inlined ones included),
// else the compiled caller.
func (d *dump) misses(sym callgrind.Symbolizer) map[string]int64 {
	out := map[string]int64{}
	for k, sites := range d.arcs {
		if !slices.Contains(MissPaths, k[1]) || slices.Contains(MissPaths, k[0]) {
			continue
		}
		for _, s := range sites {
			name := k[0]
			if sym != nil {
				if fr, ok := sym(s.addr); ok && len(fr) > 0 {
					name = fr[len(fr)-1].Func
				}
			}
			if s.calls > 0 {
				out[name] += s.calls
			}
		}
	}
	return out
}
