package gate

import (
	"regexp"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// The benchmark's own code is not judged: a counted record measures the
// module's functions through its benchmarks, and a function defined in a
// _test.go file (the benchmark function, its closures, its helpers) is
// the harness that runs them. Its counts are what the benchmark's loop
// and setup execute, and a counted process's allocations whose chain of
// callers callgrind lost after a stack switch are charged to it, the
// outermost function of the module on the stack: fxamacker/cbor's
// BenchmarkUnmarshalWebAuthn "allocated" 1 -> 2.25 objects an op in a
// record of a commit against its comment-only child (docs/instructions.md).
// It is shown, never judged.

// harnessFuncs names the functions of ps that are defined in a _test.go
// file, with the allocation profiles the counted ps hold, and the
// benchmark functions and their closures by name (a function a profile
// names without its file: go test runs only functions of _test.go files
// as benchmarks).
func harnessFuncs(ps ...*profile.Profile) map[string]bool {
	out := map[string]bool{}
	add := func(p *profile.Profile) {
		for _, f := range p.Function {
			if f != nil && (strings.HasSuffix(f.Filename, "_test.go") || benchmarkFunc(f.Name)) {
				out[f.Name] = true
			}
		}
	}
	for _, p := range ps {
		if p == nil {
			continue
		}
		add(p)
		if ap, err := allocsOf(p); err == nil && ap != nil {
			add(ap)
		}
	}
	return out
}

// notHarness is judge without the functions harness names.
func notHarness(judge func(string) bool, harness map[string]bool) func(string) bool {
	if len(harness) == 0 {
		return judge
	}
	return func(name string) bool { return !harness[name] && judge(name) }
}

// allocsJudged is the allocation judgement's functions: those of base's
// and head's allocation profiles that only matches (every one when only
// is nil) and harness does not name, as one pattern of their names.
func allocsJudged(base, head *profile.Profile, only *regexp.Regexp, harness map[string]bool) *regexp.Regexp {
	if len(harness) == 0 {
		return only
	}
	names := map[string]bool{}
	for _, p := range []*profile.Profile{base, head} {
		ap, err := allocsOf(p)
		if err != nil || ap == nil {
			continue
		}
		for _, f := range ap.Function {
			if f != nil && !harness[f.Name] && (only == nil || only.MatchString(f.Name)) {
				names[regexp.QuoteMeta(f.Name)] = true
			}
		}
	}
	if len(names) == 0 {
		return regexp.MustCompile(`a^`) // matches no name
	}
	quoted := make([]string, 0, len(names))
	for n := range names {
		quoted = append(quoted, n)
	}
	sort.Strings(quoted)
	return regexp.MustCompile("^(?:" + strings.Join(quoted, "|") + ")$")
}

// benchmarkFunc reports whether name is a benchmark function of a package
// (pkg.BenchmarkX), or a closure or generic instance of one.
func benchmarkFunc(name string) bool {
	i := strings.LastIndex(name, "/")
	_, ident, ok := strings.Cut(name[i+1:], ".")
	if !ok || !strings.HasPrefix(ident, "Benchmark") {
		return false
	}
	// The identifier ends at a closure's or an instance's suffix.
	end := strings.IndexAny(ident, ".[")
	if end < 0 {
		end = len(ident)
	}
	rest := ident[len("Benchmark"):end]
	// As go test: Benchmark alone, or followed by anything but a
	// lower-case letter (BenchmarkX, Benchmark_x).
	return rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z')
}
