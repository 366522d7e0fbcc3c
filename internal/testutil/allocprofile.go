package testutil

import (
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// AllocProfile builds an exact allocation profile (alloc_objects,
// alloc_space, period 1) of the given stacks, each "f@line;caller@line"
// (leaf first), with their objects and bytes. Each function is in file
// NAME.go.
func AllocProfile(stacks map[string][2]int64) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"}, Period: 1,
	}
	funcs := map[string]*profile.Function{}
	for stack, v := range stacks {
		var locs []*profile.Location
		for _, fr := range strings.Split(stack, ";") {
			name, line, _ := strings.Cut(fr, "@")
			f := funcs[name]
			if f == nil {
				f = &profile.Function{ID: uint64(len(funcs) + 1), Name: name, Filename: name + ".go"}
				funcs[name] = f
				p.Function = append(p.Function, f)
			}
			n, _ := strconv.ParseInt(line, 10, 64)
			l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f, Line: n}}}
			p.Location = append(p.Location, l)
			locs = append(locs, l)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{v[0], v[1]}})
	}
	return p
}
