package perfassert

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

type measurement struct {
	time     time.Duration
	samples  int64
	hasCount bool
	stacks   []Stack
}

// measure sums the samples of p through (total) or ending in (self) a
// function that match accepts, selecting samples as analysis.Functions does,
// and keeps the heaviest stacks. A sample counts once however many matching
// frames it has, so pooled selections and recursion are not double counted.
func measure(p *profile.Profile, match func(string) bool, c *config, self bool) (measurement, error) {
	var m measurement
	ti, ci, toNanos, err := analysis.ValueIndex(p, c.sampleType)
	if err != nil {
		return m, err
	}
	m.hasCount = ci >= 0
	// Stacks are gathered by location ids (no allocation per sample), then
	// merged by function names, which different lines of a function share.
	type locStack struct {
		frames  []string
		through int
		time    time.Duration
	}
	byLocs := make(map[string]*locStack)
	var key []byte
	var names []string
	matched := make(map[string]bool) // memoised match results per name
	for si, s := range p.Sample {
		if !c.selects(s) {
			continue
		}
		names = frameNames(names[:0], s)
		if len(names) == 0 {
			continue
		}
		if c.dropSynthetic && analysis.IsSynthetic(names[0]) {
			continue
		}
		hit, through := false, 0
		if self {
			hit = matchName(matched, match, names[0])
		} else {
			for i, n := range names {
				if matchName(matched, match, n) {
					hit, through = true, i
				}
			}
		}
		if !hit {
			continue
		}
		if len(s.Value) <= ti {
			return m, fmt.Errorf("sample %d has %d values, want at least %d", si, len(s.Value), ti+1)
		}
		v := time.Duration(s.Value[ti] * toNanos)
		m.time += v
		if ci >= 0 && ci < len(s.Value) {
			m.samples += s.Value[ci]
		}
		key = key[:0]
		for _, l := range s.Location {
			key = binary.AppendUvarint(key, l.ID)
		}
		ls, ok := byLocs[string(key)]
		if !ok {
			// Harness frames (testing.tRunner, ...) at the root end say
			// nothing about the code: leave them out.
			cut := len(names)
			for cut > through+1 && isHarness(names[cut-1]) {
				cut--
			}
			ls = &locStack{frames: append([]string(nil), names[:cut]...), through: through}
			byLocs[string(key)] = ls
		}
		ls.time += v
	}
	byNames := make(map[string]*Stack, len(byLocs))
	for _, ls := range byLocs {
		k := strings.Join(ls.frames, "\x00")
		st, ok := byNames[k]
		if !ok {
			st = &Stack{Frames: ls.frames, Through: ls.through}
			byNames[k] = st
		}
		st.Time += ls.time
	}
	for _, st := range byNames {
		m.stacks = append(m.stacks, *st)
	}
	slices.SortFunc(m.stacks, func(a, b Stack) int {
		if a.Time != b.Time {
			return cmp.Compare(b.Time, a.Time)
		}
		return slices.Compare(a.Frames, b.Frames)
	})
	if len(m.stacks) > stacksN {
		m.stacks = m.stacks[:stacksN]
	}
	return m, nil
}

func matchName(memo map[string]bool, match func(string) bool, name string) bool {
	v, ok := memo[name]
	if !ok {
		v = match(name)
		memo[name] = v
	}
	return v
}

// frameNames appends the function names of s, leaf first, one per inlined
// line, named as the analysis package names them.
func frameNames(dst []string, s *profile.Sample) []string {
	for _, l := range s.Location {
		if len(l.Line) == 0 {
			dst = append(dst, pbuild.UnsymbolizedName(l))
			continue
		}
		for _, ln := range l.Line {
			name := ""
			if ln.Function != nil {
				name = ln.Function.Name
			}
			if name == "" {
				name = pbuild.UnsymbolizedName(l)
			}
			dst = append(dst, name)
		}
	}
	return dst
}

func (c *config) selects(s *profile.Sample) bool {
	return pbuild.SelectsThreadProcess(s, c.threads, c.processes)
}

func sortByTotal(fs []analysis.Function) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := &fs[i], &fs[j]
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		if a.Self != b.Self {
			return a.Self > b.Self
		}
		return a.Name < b.Name
	})
}
