package valgrind

import (
	"slices"
	"testing"

	"github.com/google/pprof/profile"
)

// countProfile builds a profile of counts from stacks (leaf first, names
// joined by spaces) and their counts.
func countProfile(samples map[string]int64) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "instructions", Unit: "count"}}}
	funcs := map[string]*profile.Function{}
	locs := map[string]*profile.Location{}
	for _, stack := range slices.Sorted(func(yield func(string) bool) {
		for k := range samples {
			if !yield(k) {
				return
			}
		}
	}) {
		s := &profile.Sample{Value: []int64{samples[stack]}}
		for _, name := range splitFields(stack) {
			f := funcs[name]
			if f == nil {
				f = &profile.Function{ID: uint64(len(funcs) + 1), Name: name}
				funcs[name] = f
				p.Function = append(p.Function, f)
				l := &profile.Location{ID: uint64(len(locs) + 1), Line: []profile.Line{{Function: f}}}
				locs[name] = l
				p.Location = append(p.Location, l)
			}
			s.Location = append(s.Location, locs[name])
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

func splitFields(s string) []string {
	var out []string
	start := -1
	for i, r := range s + " " {
		if r == ' ' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

// selfCounts is each leaf function's count.
func selfCounts(p *profile.Profile) map[string]int64 {
	m := map[string]int64{}
	for _, s := range p.Sample {
		if s.Value[0] <= 0 {
			m["<not above zero>"]++
		}
		m[s.Location[0].Line[0].Function.Name] += s.Value[0]
	}
	return m
}

// TestDifference checks that the difference keeps each function's self
// count when callgrind moved part of it to another stack, drops and names
// a function below zero, and leaves no value at or below zero.
func TestDifference(t *testing.T) {
	less := countProfile(map[string]int64{
		"work loop main":  1000,
		"work loop other": 40, // on another stack in the first count
		"monitor sysmon":  900,
		"same main":       7,
		"setup main":      50,
	})
	more := countProfile(map[string]int64{
		"work loop main":  2100,
		"work loop other": 10,
		"monitor sysmon":  300,
		"same main":       7,
		"setup main":      50,
		"grown loop main": 5,
	})
	d, negative, err := Difference(more, less)
	if err != nil {
		t.Fatal(err)
	}
	got := selfCounts(d)
	want := map[string]int64{"work": 1070, "grown": 5}
	if len(got) != len(want) || got["work"] != want["work"] || got["grown"] != want["grown"] {
		t.Errorf("self counts %v, want %v", got, want)
	}
	if !slices.Equal(negative, []string{"monitor"}) {
		t.Errorf("negative %q, want [monitor]", negative)
	}
	// The part below zero came off the largest stack: work's other stack
	// is gone, its main stack holds 1100-30.
	for _, s := range d.Sample {
		if s.Location[0].Line[0].Function.Name == "work" && (len(s.Location) != 3 || s.Location[2].Line[0].Function.Name != "main" || s.Value[0] != 1070) {
			t.Errorf("work's stack %v: %d", s.Location, s.Value[0])
		}
	}
}
