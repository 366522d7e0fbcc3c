package synth

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// PairSpec describes a synthetic program of many functions calling each
// other, sampled along random call paths, and a base and head profile of
// it that differ in one function (for tests of how the reports scale).
type PairSpec struct {
	Seed      uint64
	Functions int // distinct functions
	Stacks    int // distinct stacks, one sample or more each
	// MinDepth and MaxDepth bound the frames of a stack.
	MinDepth, MaxDepth int
	// Slower is the function whose self time head multiplies by Factor.
	Slower int
	Factor float64
}

// Name is the name of function i: 100 packages of functions.
func Name(i int) string { return fmt.Sprintf("example.com/app/pkg%02d.Func%05d", i%100, i) }

// Profiles draws the base and head profiles of s, sampled every
// millisecond. Each function calls four others picked at random, so the
// stacks, random walks from one of twenty entry points, share their outer
// frames and diverge below. Head is base with the self time of s.Slower
// multiplied by s.Factor.
func Profiles(s PairSpec) (base, head *profile.Profile, err error) {
	r := rand.New(rand.NewPCG(s.Seed, 0x5ca1ab1e))
	callees := make([][4]int, s.Functions)
	for i := range callees {
		for j := range callees[i] {
			callees[i][j] = r.IntN(s.Functions)
		}
	}
	b, h := pbuild.New(pbuild.Sampled), pbuild.New(pbuild.Sampled)
	locs := func(pb *pbuild.Builder) []*profile.Location {
		l := make([]*profile.Location, s.Functions)
		for i := range l {
			l[i] = pb.Location(pbuild.Frame{Name: Name(i), File: fmt.Sprintf("/src/app/pkg%02d/f%d.go", i%100, i), StartLine: int64(i%500 + 1), Line: int64(i%500 + 2)})
		}
		return l
	}
	bl, hl := locs(b), locs(h)
	stack := make([]int, 0, s.MaxDepth)
	bs := make([]*profile.Location, 0, s.MaxDepth)
	hs := make([]*profile.Location, 0, s.MaxDepth)
	for range s.Stacks {
		depth := s.MinDepth + r.IntN(s.MaxDepth-s.MinDepth+1)
		stack = append(stack[:0], r.IntN(20)*(s.Functions/20))
		for len(stack) < depth {
			stack = append(stack, callees[stack[len(stack)-1]][r.IntN(4)])
		}
		if r.IntN(50) == 0 {
			stack[len(stack)-1] = s.Slower // a hot leaf, reached from many paths
		}
		bs, hs = bs[:0], hs[:0]
		for k := len(stack) - 1; k >= 0; k-- { // leaf first
			bs = append(bs, bl[stack[k]])
			hs = append(hs, hl[stack[k]])
		}
		n := int64(1 + r.IntN(3))
		b.Add(bs, n, n*int64(time.Millisecond), pbuild.NewLabels())
		hn := n
		if stack[len(stack)-1] == s.Slower {
			hn = int64(float64(n)*s.Factor + 0.5)
		}
		h.Add(hs, hn, hn*int64(time.Millisecond), pbuild.NewLabels())
	}
	if base, err = b.Finish("synthetic", int64(time.Millisecond), 0); err != nil {
		return nil, nil, err
	}
	if head, err = h.Finish("synthetic", int64(time.Millisecond), 0); err != nil {
		return nil, nil, err
	}
	return base, head, nil
}
