// Package suggest finds the function names closest to a selector that
// matched nothing: the "did you mean" of perfassert's failures and of
// budget lines.
package suggest

import (
	"cmp"
	"slices"
	"strings"
	"unsafe"
)

// Candidate is a name that may be suggested, with a weight (its time, say)
// that orders names equally close.
type Candidate struct {
	Name   string
	Weight int64
}

// Closest returns up to n names of cands close to sel: names equal to it
// or containing it ignoring case, names whose last element (after the
// last slash) it contains or that contain its last element, then names
// whose last element is within a small edit distance of its own, heaviest
// first within each group. When isRegexp is set, sel is a regular
// expression and its metacharacters are dropped first. A name given
// several times is considered once, with its first weight.
func Closest(sel string, isRegexp bool, cands []Candidate, n int) []string {
	if isRegexp {
		sel = strings.Map(func(r rune) rune {
			if strings.ContainsRune(`\^$*+?()[]{}|`, r) {
				return -1
			}
			return r
		}, sel)
	}
	want := strings.ToLower(sel)
	if want == "" || n <= 0 {
		return nil
	}
	wantShort := ShortName(want)
	maxDist := max(2, len(wantShort)/3)
	type cand struct {
		name   string
		class  int
		dist   int
		weight int64
		at     int // index in cands: the first of a name wins
	}
	var (
		cs    []cand
		lower []byte // the name in lower case, reused
		rows  [2][]int
	)
	for i, f := range cands {
		lower = appendLower(lower[:0], f.Name)
		name := unsafeString(lower) // valid until lower is next written
		short := ShortName(name)
		c := cand{name: f.Name, weight: f.Weight, at: i}
		switch {
		case name == want:
			c.class = 0
		case strings.Contains(name, want) || (len(short) >= 3 && strings.Contains(want, short)) || strings.Contains(short, wantShort):
			c.class, c.dist = 1, abs(len(name)-len(want))
		case abs(min(len(short), limit)-min(len(wantShort), limit)) > maxDist:
			continue // the distance is at least the difference in length
		default:
			d := editDistance(wantShort, short, &rows)
			if d > maxDist {
				continue
			}
			c.class, c.dist = 2, d
		}
		cs = append(cs, c)
	}
	// A name given several times keeps its first weight.
	slices.SortFunc(cs, func(a, b cand) int { return cmp.Or(strings.Compare(a.name, b.name), cmp.Compare(a.at, b.at)) })
	cs = slices.CompactFunc(cs, func(a, b cand) bool { return a.name == b.name })
	slices.SortFunc(cs, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.class, b.class), cmp.Compare(a.dist, b.dist),
			cmp.Compare(b.weight, a.weight), strings.Compare(a.name, b.name))
	})
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// ShortName is a function name without its package path: the part after
// the last slash of the path ("example.com/m/pkg.(*T).Run" ->
// "pkg.(*T).Run"), keeping the element before a major version's
// ("github.com/Masterminds/semver/v3.Version.String" ->
// "semver/v3.Version.String", not "v3.Version.String"). Slashes after the
// path (in a generic's type arguments) do not count.
func ShortName(name string) string {
	end := len(name)
	if b := strings.IndexByte(name, '['); b >= 0 {
		end = b
	}
	i := strings.LastIndexByte(name[:end], '/')
	if i < 0 {
		return name
	}
	if majorVersion(name[i+1 : end]) {
		if j := strings.LastIndexByte(name[:i], '/'); j >= 0 {
			return name[j+1:]
		}
		return name
	}
	return name[i+1:]
}

// majorVersion reports whether the last element of a symbol's package
// path, s (the element and the rest of the symbol), is a major version
// suffix: "v2." and on.
func majorVersion(s string) bool {
	if len(s) < 3 || s[0] != 'v' {
		return false
	}
	n := 1
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n > 1 && n < len(s) && s[n] == '.'
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// limit bounds the bytes of each string editDistance compares.
const limit = 128

// editDistance is the Levenshtein distance of a and b in bytes, over at most
// the first 128 bytes of each so that its cost stays bounded; rows is
// scratch space kept between calls.
func editDistance(a, b string, rows *[2][]int) int {
	a, b = a[:min(len(a), limit)], b[:min(len(b), limit)]
	for i := range rows {
		if cap(rows[i]) < len(b)+1 {
			rows[i] = make([]int, limit+1)
		}
	}
	prev, cur := rows[0][:len(b)+1], rows[1][:len(b)+1]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// appendLower appends s in lower case (as strings.ToLower does for ASCII;
// other runes are kept, which only makes fewer names alike).
func appendLower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// unsafeString is b as a string without a copy; b must not change while
// the string is used.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
