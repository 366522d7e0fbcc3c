package budget

import (
	"fmt"
	"testing"

	"github.com/google/pprof/profile"
)

// bigProfile has n functions, each the leaf of one sample under main.main.
func bigProfile(n int) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     1e6,
	}
	root := &profile.Function{ID: 1, Name: "main.main", Filename: "main.go"}
	rootLoc := &profile.Location{ID: 1, Line: []profile.Line{{Function: root, Line: 1}}}
	p.Function = append(p.Function, root)
	p.Location = append(p.Location, rootLoc)
	for i := 0; i < n; i++ {
		f := &profile.Function{ID: uint64(i + 2), Name: fmt.Sprintf("pkg%d.F%d", i%100, i), Filename: "f.go"}
		l := &profile.Location{ID: uint64(i + 2), Line: []profile.Line{{Function: f, Line: 10}}}
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, l)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l, rootLoc}, Value: []int64{int64(1 + i%7), int64(1+i%7) * 1e6}})
	}
	return p
}

// BenchmarkCheck50k checks a budget with an exact rule, a pattern rule and
// a missing function (with its did-you-mean search) on 50,000 functions.
func BenchmarkCheck50k(b *testing.B) {
	p := bigProfile(50000)
	bud, err := Parse("b", []byte(`version: 1
rules:
  - function: pkg7.F49907
    max_self: 10ms
  - match: '^pkg1[0-9]\.'
    max_self_share: 1%
  - function: pkg7.F99999
    max_self: 10ms
`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Check(bud, []*profile.Profile{p}, nil)
		if err != nil || len(res.Checks) != 3 {
			b.Fatal(err, res)
		}
	}
}
