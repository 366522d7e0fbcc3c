// Package modname says which function names are a Go module's own, as the
// Go toolchain writes them in a binary's symbol table and so in every
// profile (runtime/pprof, callgrind, perf): the one module filter of
// perfassert, diff --module, record and merge.
//
// The toolchain names a function by its package's path escaped as
// cmd/internal/objabi.PathToPrefix escapes it: a byte <= ' ', '%', '"' or
// >= 0x7F anywhere, and a '.' after the last '/', becomes %xx. The module
// gopkg.in/yaml.v3's functions are gopkg.in/yaml%2ev3.F; its package
// gopkg.in/yaml.v3/sub's are gopkg.in/yaml.v3/sub.F.
package modname

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hotbudget/hotbudget/internal/suggest"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Prefix is the package path path as the Go toolchain writes it before
// the '.' of a symbol name (objabi.PathToPrefix).
func Prefix(path string) string {
	return escape(path, strings.LastIndex(path, "/"))
}

// escape escapes the bytes of s that PathToPrefix escapes, escaping '.'
// only after index slash (len(s) for none).
func escape(s string, slash int) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || (c == '.' && i > slash) || c == '%' || c == '"' || c >= 0x7F {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Pattern matches the function names of the packages of the modules mods
// (import paths, as go list -m prints them): the module's root package
// and its external test package (gopkg.in/yaml%2ev3.F,
// gopkg.in/yaml%2ev3_test.TestX), its nested packages and theirs
// (example.com/m/sub.F, example.com/m/sub_test.X), with every form of
// name after the package (methods, closures, generic instantiations).
// A module sharing a prefix (example.com/mod2 for example.com/mod) does
// not match. Pattern returns nil when mods is empty.
func Pattern(mods []string) *regexp.Regexp {
	var alts []string
	for _, m := range mods {
		if m == "" {
			continue
		}
		// The root package and its test package: the last element's
		// dots escaped; "_test" holds nothing to escape.
		// What follows the '.' holds no '/' before a generic's type
		// arguments: example.com/x.v3/sub.F is not example.com/x's.
		alts = append(alts, regexp.QuoteMeta(Prefix(m))+`(?:_test)?\.[^/\[]*(?:\[|$)`)
		// Nested packages: the module's dots are before the last '/'.
		alts = append(alts, regexp.QuoteMeta(escape(m, len(m)))+`/`)
	}
	if len(alts) == 0 {
		return nil
	}
	return regexp.MustCompile(`^(?:` + strings.Join(alts, "|") + `)`)
}

// Unmatched is the failure of a filter that matched none of names: what
// it was, as the user gave it ("the functions of gopkg.in/yaml.v3",
// "--gate REGEXP"), how many functions it was tried on, and the names
// closest to it. The filter is the modules mods, or else the regular
// expression gate: the names closest to a module are those sharing the
// longest start with its functions' names, to a regular expression those
// suggest.Closest finds; when none is close, the heaviest names.
func Unmatched(what string, mods []string, gate string, names []suggest.Candidate) string {
	seen := map[string]bool{}
	var uniq []suggest.Candidate
	for _, c := range names {
		if !seen[c.Name] {
			seen[c.Name] = true
			uniq = append(uniq, c)
		}
	}
	msg := fmt.Sprintf("%s matched none of the %d functions measured, so nothing was judged", what, len(uniq))
	if len(uniq) == 0 {
		return msg
	}
	// Heaviest first, then by name: the order of equally close names.
	slices.SortStableFunc(uniq, func(a, b suggest.Candidate) int {
		return cmp.Or(cmp.Compare(b.Weight, a.Weight), strings.Compare(a.Name, b.Name))
	})
	var close []string
	if len(mods) > 0 {
		close = closestToModule(mods, uniq, 3)
	} else {
		close = suggest.Closest(gate, true, uniq, 3)
	}
	label := "closest names"
	if len(close) == 0 {
		for _, c := range uniq[:min(3, len(uniq))] {
			close = append(close, c.Name)
		}
		label = "heaviest names"
	}
	for i, n := range close {
		close[i] = textfmt.Name(n)
	}
	return msg + "; " + label + ": " + strings.Join(close, ", ")
}

// closestToModule is up to n names of cands (heaviest first) sharing the
// longest start with a function name of one of mods, the start at least
// as long as the module's path up to its last '/' (its host and
// directories): names of the same host or organisation.
func closestToModule(mods []string, cands []suggest.Candidate, n int) []string {
	type near struct {
		name   string
		common int
	}
	var ns []near
	for _, c := range cands {
		best := 0
		for _, m := range mods {
			p := Prefix(m) + "."
			k := 0
			for k < len(p) && k < len(c.Name) && p[k] == c.Name[k] {
				k++
			}
			if k > strings.LastIndex(m, "/") {
				best = max(best, k)
			}
		}
		if best > 0 {
			ns = append(ns, near{c.Name, best})
		}
	}
	slices.SortStableFunc(ns, func(a, b near) int { return cmp.Compare(b.common, a.common) })
	var out []string
	for _, x := range ns[:min(n, len(ns))] {
		out = append(out, x.name)
	}
	return out
}
