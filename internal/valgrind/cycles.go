package valgrind

import (
	"fmt"
	"os"
	"slices"

	"github.com/google/pprof/profile"
)

// Estimated cycles: the cost model of a dump with cache simulation (Run's
// Cache), gungraun's (iai-callgrind's): an access that hits the first-level
// cache costs a cycle, one that misses it and hits the last level
// CyclesLL, one that misses both (goes to memory) CyclesRAM. Per sample:
//
//	RAM     = ILmr + DLmr + DLmw
//	LL hits = I1mr + D1mr + D1mw - RAM
//	L1 hits = Ir + Dr + Dw - LL hits - RAM
//	cycles  = L1 hits + CyclesLL*LL hits + CyclesRAM*RAM
//
// The estimate is linear in the events, so the cycles of a difference of
// two dumps are the difference of their cycles.
const (
	CyclesLL  = 5
	CyclesRAM = 35
)

// CyclesType is the sample type of estimated cycles.
const CyclesType = "cycles"

// CacheEvents are the sample types of a dump with cache simulation, as
// callgrind's reader names them, in callgrind's order.
var CacheEvents = []string{"instructions", "dr", "dw", "i1mr", "d1mr", "d1mw", "ilmr", "dlmr", "dlmw"}

// EstimateCycles returns p, a profile of a callgrind dump with cache
// simulation, with estimated cycles as its first sample type (and default),
// followed by CacheEvents: the instructions and the cache events, each a
// sample type of its own (go tool pprof -sample_index=d1mr). p is not
// changed. A profile without the cache events is an error saying so.
func EstimateCycles(p *profile.Profile) (*profile.Profile, error) {
	idx := make([]int, len(CacheEvents))
	for i, e := range CacheEvents {
		idx[i] = slices.IndexFunc(p.SampleType, func(st *profile.ValueType) bool { return st.Type == e && st.Unit == "count" })
		if idx[i] < 0 {
			return nil, fmt.Errorf("the dump has no %s events: it was not counted with cache simulation (--cache-sim=yes)", e)
		}
	}
	q := p.Copy()
	q.SampleType = []*profile.ValueType{{Type: CyclesType, Unit: "count"}}
	for _, e := range CacheEvents {
		q.SampleType = append(q.SampleType, &profile.ValueType{Type: e, Unit: "count"})
	}
	q.DefaultSampleType = CyclesType
	q.PeriodType = &profile.ValueType{Type: CyclesType, Unit: "count"}
	q.Period = 1
	for _, s := range q.Sample {
		v := make([]int64, 1+len(idx))
		for i, j := range idx {
			if j < len(s.Value) {
				v[1+i] = s.Value[j]
			}
		}
		v[0] = Cycles(v[1:])
		s.Value = v
	}
	return q, nil
}

// Cycles is the estimated cycles of events in CacheEvents' order.
func Cycles(ev []int64) int64 {
	ir, dr, dw, i1mr, d1mr, d1mw, ilmr, dlmr, dlmw := ev[0], ev[1], ev[2], ev[3], ev[4], ev[5], ev[6], ev[7], ev[8]
	ram := ilmr + dlmr + dlmw
	ll := i1mr + d1mr + d1mw - ram
	l1 := ir + dr + dw - ll - ram
	return l1 + CyclesLL*ll + CyclesRAM*ram
}

// EstimateDump is EstimateCycles of p, read from callgrind's dump at path,
// after checking that the dump says it simulated want: a dump of other
// caches (the host's, when the options were lost) is an error naming both.
func EstimateDump(p *profile.Profile, path string, want Geometry) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	g, ok, err := DumpGeometry(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("callgrind's dump %s simulated no caches", path)
	}
	if g != want {
		return nil, fmt.Errorf("callgrind's dump %s simulated caches %s, not the %s asked for", path, g, want)
	}
	q, err := EstimateCycles(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return q, nil
}
