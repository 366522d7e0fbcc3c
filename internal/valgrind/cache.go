package valgrind

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Level is one simulated cache: its size in bytes, its associativity and
// its line size in bytes, as callgrind's --I1, --D1 and --LL take them.
type Level struct {
	Size, Ways, Line int
}

// Geometry is the caches callgrind simulates: the first-level instruction
// and data caches and the last-level cache. Without one, callgrind takes
// the host's, so the same program misses differently on another machine;
// the project gives it CIGeometry instead.
type Geometry struct {
	I1, D1, LL Level
}

// CIGeometry is the fixed geometry of estimated cycles: a core of a
// typical CI runner (the AMD EPYC of GitHub's hosted Linux runners: 32 KiB
// 8-way first-level caches with 64-byte lines, and a core's share of the
// last-level cache, 4 MiB 16-way). docs/instructions.md says why.
var CIGeometry = Geometry{
	I1: Level{Size: 32 << 10, Ways: 8, Line: 64},
	D1: Level{Size: 32 << 10, Ways: 8, Line: 64},
	LL: Level{Size: 4 << 20, Ways: 16, Line: 64},
}

// Args are callgrind's options that simulate g.
func (g Geometry) Args() []string {
	opt := func(name string, l Level) string { return fmt.Sprintf("--%s=%d,%d,%d", name, l.Size, l.Ways, l.Line) }
	return []string{"--cache-sim=yes", opt("I1", g.I1), opt("D1", g.D1), opt("LL", g.LL)}
}

// String says g as the baselines record it: "I1 32768,8,64 D1 32768,8,64
// LL 4194304,16,64" (size in bytes, ways, line size in bytes).
func (g Geometry) String() string {
	l := func(l Level) string { return fmt.Sprintf("%d,%d,%d", l.Size, l.Ways, l.Line) }
	return "I1 " + l(g.I1) + " D1 " + l(g.D1) + " LL " + l(g.LL)
}

// DumpGeometry reads the geometry a callgrind dump says it simulated, from
// its header's "desc: I1 cache: 32768 B, 64 B, 8-way associative" lines;
// ok is false when the dump simulated no caches. It reads the header only.
func DumpGeometry(r io.Reader) (g Geometry, ok bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	seen := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "events:") || strings.HasPrefix(line, "fl=") || strings.HasPrefix(line, "fn=") {
			break
		}
		rest, found := strings.CutPrefix(line, "desc: ")
		if !found {
			continue
		}
		name, spec, found := strings.Cut(rest, " cache: ")
		var dst *Level
		switch name {
		case "I1":
			dst = &g.I1
		case "D1":
			dst = &g.D1
		case "LL":
			dst = &g.LL
		}
		if !found || dst == nil {
			continue
		}
		// "32768 B, 64 B, 8-way associative"
		f := strings.Split(spec, ",")
		if len(f) != 3 {
			return g, false, fmt.Errorf("callgrind's dump: cache line %q", line)
		}
		size, err1 := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(f[0]), " B"))
		lsize, err2 := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(f[1]), " B"))
		ways, err3 := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(f[2]), "-way associative"))
		if err1 != nil || err2 != nil || err3 != nil {
			return g, false, fmt.Errorf("callgrind's dump: cache line %q", line)
		}
		*dst = Level{Size: size, Ways: ways, Line: lsize}
		seen++
	}
	if err := sc.Err(); err != nil {
		return g, false, err
	}
	return g, seen == 3, nil
}
