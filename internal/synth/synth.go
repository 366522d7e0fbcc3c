// Package synth generates large, realistic Go CPU profiles for benchmarks
// and equivalence tests, from a fixed seed.
//
// A profile has the shape `go test -cpuprofile` gives a big program: one
// mapping for the binary, functions named like
// example.com/pkg/sub12.(*Type3).Method7 in files under a module path,
// locations with addresses whose Lines hold inlined frames (callee first),
// a few unsymbolized locations, and stacks from runtime.goexit through
// main down to a leaf, with sample counts drawn from a heavy-tailed
// distribution so that a few functions dominate as in real profiles.
package synth

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/google/pprof/profile"
)

// Spec says how big a profile to make.
type Spec struct {
	Functions int    // distinct functions
	Stacks    int    // distinct samples (stacks)
	MinDepth  int    // locations per stack, at least
	MaxDepth  int    // and at most
	Seed      uint64 // the same seed gives the same profile
	// Labels, when set, puts pprof labels (thread, tid) on the samples so
	// that selections by thread have something to select.
	Labels bool
	// Slower makes every Slower-th function's leaf samples twice as heavy:
	// a head profile that regressed against the base with the same seed.
	Slower int
}

// Big is the pair the speed goals are measured on: 50,000 functions and
// 200,000 stacks of depth 8 to 24, about 9 MB gzipped.
var Big = Spec{Functions: 50_000, Stacks: 200_000, MinDepth: 8, MaxDepth: 24, Seed: 1}

// Profile generates the profile s describes.
func Profile(s Spec) *profile.Profile {
	r := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
		TimeNanos:  1_700_000_000_000_000_000,
	}
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x4000000, File: "/tmp/go-build1234/b001/exe/app.test",
		HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true}
	p.Mapping = []*profile.Mapping{m}

	fn := func(name, file string, start int64) *profile.Function {
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: file, StartLine: start}
		p.Function = append(p.Function, f)
		return f
	}
	goexit := fn("runtime.goexit", "/usr/local/go/src/runtime/asm_amd64.s", 1700)
	mainFn := fn("main.main", "/home/user/app/main.go", 12)
	testMain := fn("testing.tRunner", "/usr/local/go/src/testing/testing.go", 1890)
	for len(p.Function) < s.Functions {
		i := len(p.Function)
		pkg := r.IntN(max(1, s.Functions/100))
		file := fmt.Sprintf("/home/user/go/pkg/mod/example.com/pkg@v1.%d.0/sub%d/file%d.go", pkg%7, pkg, r.IntN(6))
		var name string
		switch k := r.IntN(10); {
		case k < 6:
			name = fmt.Sprintf("example.com/pkg/sub%d.(*Type%d).Method%d", pkg, r.IntN(20), i)
		case k < 9:
			name = fmt.Sprintf("example.com/pkg/sub%d.func%d", pkg, i)
		default:
			name = fmt.Sprintf("example.com/pkg/sub%d.Run%d.func%d", pkg, i, 1+r.IntN(3))
		}
		fn(name, file, int64(1+r.IntN(2000)))
	}

	addr := uint64(0x401000)
	loc := func(lines ...profile.Line) *profile.Location {
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: addr, Line: lines}
		addr += 0x10 + uint64(r.IntN(0x40))
		p.Location = append(p.Location, l)
		return l
	}
	line := func(f *profile.Function) profile.Line {
		return profile.Line{Function: f, Line: f.StartLine + int64(r.IntN(80))}
	}
	root := []*profile.Location{loc(line(goexit)), loc(line(testMain)), loc(line(mainFn))}
	// Each function has a few call sites; a fifth of them have one or two
	// callees inlined into them; one location in a hundred lacks symbols.
	body := p.Function[3:]
	if len(body) == 0 {
		body = p.Function
	}
	sites := make([][]*profile.Location, len(body))
	for i, f := range body {
		n := 1 + r.IntN(3)
		for j := 0; j < n; j++ {
			switch k := r.IntN(100); {
			case k == 0:
				sites[i] = append(sites[i], loc())
			case k < 20:
				lines := []profile.Line{line(body[r.IntN(len(body))])}
				if k < 5 {
					lines = append(lines, line(body[r.IntN(len(body))]))
				}
				sites[i] = append(sites[i], loc(append(lines, line(f))...))
			default:
				sites[i] = append(sites[i], loc(line(f)))
			}
		}
	}

	// A function's callees are drawn near it, so stacks share prefixes as
	// in a real call graph; leaf weights fall off as a power law.
	seen := make(map[string]bool, s.Stacks)
	key := make([]byte, 0, 256)
	// Small specs may have fewer distinct stacks than asked for: the
	// attempts are bounded.
	for tries := 0; len(p.Sample) < s.Stacks && tries < 100*s.Stacks; tries++ {
		depth := max(1, s.MinDepth+r.IntN(s.MaxDepth-s.MinDepth+1))
		stack := make([]*profile.Location, depth)
		at := r.IntN(len(body))
		nroot := min(len(root), depth-1)
		for d := depth - 1; d >= 0; d-- {
			if d >= depth-nroot {
				stack[d] = root[depth-1-d]
				continue
			}
			at = (at + r.IntN(64) - 16 + len(body)) % len(body)
			if r.IntN(8) == 0 {
				at = r.IntN(len(body))
			}
			ss := sites[at]
			stack[d] = ss[r.IntN(len(ss))]
		}
		key = key[:0]
		for _, l := range stack {
			key = fmt.Appendf(key, "%d,", l.ID)
		}
		if seen[string(key)] {
			continue
		}
		seen[string(key)] = true
		n := int64(1 + math.Floor(math.Pow(r.Float64(), 12)*200))
		if s.Slower > 0 && at%s.Slower == 0 {
			n *= 2
		}
		smp := &profile.Sample{Location: stack, Value: []int64{n, n * p.Period}}
		if s.Labels {
			tid := 1 + r.IntN(4)
			smp.Label = map[string][]string{"thread": {fmt.Sprintf("worker-%d", tid)}, "tid": {fmt.Sprint(100 + tid)}}
		}
		p.Sample = append(p.Sample, smp)
	}
	var total int64
	for _, smp := range p.Sample {
		total += smp.Value[1]
	}
	p.DurationNanos = total / 2 // two cores busy
	return p
}
