// Package shardset checks that the shards hotbudget merge is given are
// exactly shards 1..N of one record, and that each shard holds every
// result of every benchmark it lists, before merge reads a profile: a
// partial or edited set is refused, never judged as a smaller record.
//
// The command reads each shard's shard.json into a Shard (ReadFile bounds
// the read), checks its numbers with CheckNumbers as soon as it has them,
// then the whole set with Check, and each run's benchmark output with
// CheckBlock. Every error names the shard's directory and what is wrong.
package shardset

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hotbudget/hotbudget/internal/membudget"
	"golang.org/x/perf/benchfmt"
)

// Limits of a shard set: a set beyond them is refused before anything is
// allocated by their numbers.
const (
	// MaxShards is the largest N of --shard K/N.
	MaxShards = 1000
	// MaxRuns is the most runs a side (--runs) a set may hold.
	MaxRuns = 1000
	// MaxCount is the most results a run (--count) a set may hold.
	MaxCount = 1000
	// MaxBenchmarks is the most benchmarks a record may list.
	MaxBenchmarks = 100_000
	// MaxName is the longest benchmark key ("PKG NAME") in bytes.
	MaxName = 1024
	// MaxFile is the largest shard.json or bench.txt read, unless
	// HOTBUDGET_MAX_BYTES is lower.
	MaxFile = 256 << 20
)

// Sides are the revisions' names, as a shard's directories and spans
// name them.
var Sides = [2]string{"base", "head"}

// Span is where one run of one benchmark wrote its output in a side's
// bench.txt: bytes [Start, End).
type Span struct {
	Benchmark  string
	Run        int
	Start, End int
}

// Shard is what Check needs of one shard's manifest.
type Shard struct {
	Dir  string // the shard's directory, for errors
	K, N int    // shard K of N
	// Base and Head are the revisions' commits; Settings is the text of
	// every setting that must be the same in every shard.
	Base, Head, Settings string
	Modules              []string
	// Benchmarks are every benchmark of the record, "PKG NAME", sorted;
	// Recorded the shard's part of them.
	Benchmarks, Recorded []string
	// At are the recorded benchmarks each side has, by side name.
	At map[string][]string
	// Compared are the recorded benchmarks both sides have, whose timed
	// runs' profiles the shard holds; Allocations those whose allocations
	// it holds; Counted those whose counted instructions it holds (a
	// record of instructions has no timed runs).
	Compared, Allocations, Counted []string
	// Spans are each run's output in a side's bench.txt, by side name.
	Spans map[string][]Span
}

// Want is what the record's settings say every shard holds.
type Want struct {
	Runs         int  // runs a side of every benchmark timed
	Allocations  bool // the allocations of every benchmark compared
	Instructions bool // counted instructions instead of timed runs
}

// CheckNumbers checks that k of n is a shard number: 1 <= k <= n <=
// MaxShards.
func CheckNumbers(k, n int) error {
	if n < 1 || n > MaxShards || k < 1 || k > n {
		return fmt.Errorf("shard %d of %d: want 1 <= K <= N <= %d", k, n, MaxShards)
	}
	return nil
}

// CheckKey checks that key is a benchmark's key, "PKG NAME": an import
// path and a benchmark name, neither of which can name a file outside the
// shard (no empty, "." or ".." element, no leading "/", no backslash, and
// nothing unprintable: NUL, control or format characters, spaces but the
// one between package and name) nor exceed MaxName bytes.
func CheckKey(key string) error {
	if len(key) > MaxName {
		return fmt.Errorf("benchmark %q...: longer than %d bytes", key[:64], MaxName)
	}
	pkg, name, ok := strings.Cut(key, " ")
	if !ok {
		return fmt.Errorf("benchmark %q: want PACKAGE NAME", key)
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("benchmark %q: not UTF-8", key)
	}
	for _, r := range key {
		if r == '\\' || !unicode.IsPrint(r) {
			return fmt.Errorf("benchmark %q: %q is not in a package path or a benchmark name", key, r)
		}
	}
	if strings.Contains(name, " ") {
		return fmt.Errorf("benchmark %q: a benchmark name has no space", key)
	}
	if !strings.HasPrefix(name, "Benchmark") {
		return fmt.Errorf("benchmark %q: its name does not start with Benchmark", key)
	}
	for what, path := range map[string]string{"package": pkg, "name": name} {
		for _, el := range strings.Split(path, "/") {
			if el == "" || el == "." || el == ".." {
				return fmt.Errorf("benchmark %q: its %s has an element %q: not a name", key, what, el)
			}
		}
	}
	return nil
}

// Check checks that shards are exactly shards 1..N of one record, each
// complete as w says, and sorts them by K. Spans' bytes are checked
// against the files by CheckBlock, the profiles by their reader.
func Check(shards []*Shard, w Want) error {
	if len(shards) == 0 {
		return errors.New("no shard")
	}
	if len(shards) > MaxShards {
		return fmt.Errorf("%d shards: at most %d", len(shards), MaxShards)
	}
	if w.Runs < 1 || w.Runs > MaxRuns {
		return fmt.Errorf("%s: %d runs a side: want 1 to %d", shards[0].Dir, w.Runs, MaxRuns)
	}
	for _, s := range shards {
		if err := CheckNumbers(s.K, s.N); err != nil {
			return fmt.Errorf("%s: %w", s.Dir, err)
		}
	}
	sort.SliceStable(shards, func(i, j int) bool { return shards[i].K < shards[j].K })
	first := shards[0]
	n := first.N
	seen := map[int]string{}
	for _, s := range shards {
		if s.N != n {
			return fmt.Errorf("shards from two records: %s is shard %d of %d, %s shard %d of %d", s.Dir, s.K, s.N, first.Dir, first.K, n)
		}
		if d, dup := seen[s.K]; dup {
			return fmt.Errorf("%s and %s are both shard %d of %d: give each shard once", d, s.Dir, s.K, n)
		}
		seen[s.K] = s.Dir
	}
	if len(shards) < n {
		var missing []string
		for k := 1; k <= n && len(missing) < 10; k++ {
			if seen[k] == "" {
				missing = append(missing, strconv.Itoa(k))
			}
		}
		more := ""
		if m := n - len(shards) - len(missing); m > 0 {
			more = fmt.Sprintf(" and %d more", m)
		}
		return fmt.Errorf("shard %s%s of %d missing: every shard's benchmarks are judged together, so all %d are needed (got %d)",
			strings.Join(missing, ", "), more, n, n, len(shards))
	}
	if err := checkList("benchmarks", first.Benchmarks, nil); err != nil {
		return fmt.Errorf("%s: %w", first.Dir, err)
	}
	for _, s := range shards[1:] {
		what := ""
		switch {
		case s.Base != first.Base || s.Head != first.Head:
			what = fmt.Sprintf("revisions: base %q, head %q against base %q, head %q", s.Base, s.Head, first.Base, first.Head)
		case s.Settings != first.Settings:
			what = fmt.Sprintf("flags and packages: %q against %q", s.Settings, first.Settings)
		case !slices.Equal(s.Modules, first.Modules):
			what = fmt.Sprintf("modules gated: %q against %q", s.Modules, first.Modules)
		case !slices.Equal(s.Benchmarks, first.Benchmarks):
			what = fmt.Sprintf("benchmarks found: %d against %d (%s): they must list the same code's benchmarks with the same --bench",
				len(s.Benchmarks), len(first.Benchmarks), firstDifference(s.Benchmarks, first.Benchmarks))
		}
		if what != "" {
			return fmt.Errorf("shards from two records: %s (shard %d) and %s (shard %d) differ in their %s", s.Dir, s.K, first.Dir, first.K, what)
		}
	}
	for _, s := range shards {
		if err := checkShard(s, w); err != nil {
			return fmt.Errorf("%s (shard %d of %d): %w", s.Dir, s.K, s.N, err)
		}
	}
	return nil
}

// checkList checks that list is sorted, without duplicates, of valid keys
// and, with in, each of them in it.
func checkList(what string, list []string, in map[string]bool) error {
	if len(list) > MaxBenchmarks {
		return fmt.Errorf("%d %s: at most %d", len(list), what, MaxBenchmarks)
	}
	for i, key := range list {
		if err := CheckKey(key); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if i > 0 && list[i-1] >= key {
			if list[i-1] == key {
				return fmt.Errorf("%s: %q is there twice", what, key)
			}
			return fmt.Errorf("%s: not sorted (%q before %q)", what, list[i-1], key)
		}
		if in != nil && !in[key] {
			return fmt.Errorf("%s: %q is not in the shard's part of the benchmarks", what, key)
		}
	}
	return nil
}

// part is the benchmarks of all that shard k of n records: the k-th, the
// (k+n)-th...
func part(all []string, k, n int) []string {
	var p []string
	for i := k - 1; i < len(all); i += n {
		p = append(p, all[i])
	}
	return p
}

// checkShard checks that s recorded its part of the benchmarks and holds
// every result of each; its errors name the benchmark.
func checkShard(s *Shard, w Want) error {
	want := part(s.Benchmarks, s.K, s.N)
	if !slices.Equal(s.Recorded, want) {
		return fmt.Errorf("recorded %d benchmarks, not the %d its list of %d deals it (%s)", len(s.Recorded), len(want), len(s.Benchmarks), firstDifference(s.Recorded, want))
	}
	mine := map[string]bool{}
	for _, k := range s.Recorded {
		mine[k] = true
	}
	for _, l := range []struct {
		what string
		list []string
	}{{"compared", s.Compared}, {"allocations", s.Allocations}, {"instructions", s.Counted}, {"at base", s.At["base"]}, {"at head", s.At["head"]}} {
		if err := checkList(l.what, l.list, mine); err != nil {
			return err
		}
	}
	for side := range s.At {
		if side != Sides[0] && side != Sides[1] {
			return fmt.Errorf("benchmarks at a side %q: want base or head", side)
		}
	}
	for side := range s.Spans {
		if side != Sides[0] && side != Sides[1] {
			return fmt.Errorf("benchmark output of a side %q: want base or head", side)
		}
	}
	at := [2]map[string]bool{{}, {}}
	for i, side := range Sides {
		for _, k := range s.At[side] {
			at[i][k] = true
		}
	}
	var both []string
	for _, k := range s.Recorded {
		switch {
		case at[0][k] && at[1][k]:
			both = append(both, k)
		case !at[0][k] && !at[1][k]:
			return fmt.Errorf("%q: at neither revision: its results are missing", k)
		}
	}
	if w.Instructions {
		if len(s.Compared)+len(s.Allocations)+len(s.Spans["base"])+len(s.Spans["head"]) > 0 {
			return errors.New("counted instructions with timed runs or allocations besides: not what record --instructions writes")
		}
		if k, ok := missingFrom(both, s.Counted); ok {
			return fmt.Errorf("%q: its counted instructions are missing", k)
		}
		if k, ok := missingFrom(s.Counted, both); ok {
			return fmt.Errorf("%q: counted instructions of a benchmark not compared", k)
		}
		return nil
	}
	if len(s.Counted) > 0 {
		return fmt.Errorf("%q: counted instructions in a record of timed runs", s.Counted[0])
	}
	if k, ok := missingFrom(both, s.Compared); ok {
		return fmt.Errorf("%q: both revisions have it, but its runs' profiles are not listed (compared)", k)
	}
	if k, ok := missingFrom(s.Compared, both); ok {
		return fmt.Errorf("%q: compared, but not listed at both revisions", k)
	}
	if w.Allocations {
		if k, ok := missingFrom(both, s.Allocations); ok {
			return fmt.Errorf("%q: its allocations are missing (the record measured allocations: no --no-allocs)", k)
		}
	}
	if k, ok := missingFrom(s.Allocations, both); ok {
		return fmt.Errorf("%q: allocations of a benchmark not compared, or of a record without allocation runs", k)
	}
	for i, side := range Sides {
		runs := map[string][]bool{}
		for _, sp := range s.Spans[side] {
			if !at[i][sp.Benchmark] {
				return fmt.Errorf("%s/bench.txt: output of %q, which the %s revision does not have in this shard", side, sp.Benchmark, side)
			}
			if sp.Run < 1 || sp.Run > w.Runs {
				return fmt.Errorf("%s/bench.txt: %q's run %d: want 1 to %d (--runs)", side, sp.Benchmark, sp.Run, w.Runs)
			}
			if sp.Start < 0 || sp.End < sp.Start {
				return fmt.Errorf("%s/bench.txt: %q's run %d at bytes %d-%d", side, sp.Benchmark, sp.Run, sp.Start, sp.End)
			}
			if runs[sp.Benchmark] == nil {
				runs[sp.Benchmark] = make([]bool, w.Runs+1)
			}
			if runs[sp.Benchmark][sp.Run] {
				return fmt.Errorf("%s/bench.txt: %q's run %d is there twice", side, sp.Benchmark, sp.Run)
			}
			runs[sp.Benchmark][sp.Run] = true
		}
		for _, k := range s.At[side] {
			for run := 1; run <= w.Runs; run++ {
				if runs[k] == nil || !runs[k][run] {
					return fmt.Errorf("%q: the output of its run %d at %s is missing from %s/bench.txt", k, run, side, side)
				}
			}
		}
	}
	return nil
}

// missingFrom returns the first element of a not in b.
func missingFrom(a, b []string) (string, bool) {
	in := map[string]bool{}
	for _, k := range b {
		in[k] = true
	}
	for _, k := range a {
		if !in[k] {
			return k, true
		}
	}
	return "", false
}

// CheckSpans checks that spans, a side's runs, tile its bench.txt of size
// bytes as record writes it, one run's output after another: no byte
// outside a run (a run's output left in the file but not listed) and none
// in two.
func CheckSpans(spans []Span, size int) error {
	sorted := slices.Clone(spans)
	slices.SortFunc(sorted, func(a, b Span) int { return a.Start - b.Start })
	at := 0
	for _, sp := range sorted {
		if sp.Start != at || sp.End < sp.Start || sp.End > size {
			what := "belong to no run"
			if sp.Start < at {
				what = "belong to two runs"
			}
			return fmt.Errorf("bytes %d-%d of %d %s (%q's run %d starts at %d): was the file or its runs' list changed?", min(at, sp.Start), max(at, sp.Start), size, what, sp.Benchmark, sp.Run, sp.Start)
		}
		at = sp.End
	}
	if at != size {
		return fmt.Errorf("bytes %d-%d of %d belong to no run: was the file or its runs' list changed?", at, size, size)
	}
	return nil
}

// CheckBlock checks that block, one run's output of benchmark key ("PKG
// NAME"), holds count results of that benchmark and of no other (a name
// may carry go test's -GOMAXPROCS suffix), of its package when the output
// names one.
func CheckBlock(block []byte, key string, count int) error {
	pkg, name, _ := strings.Cut(key, " ")
	short := strings.TrimPrefix(name, "Benchmark")
	rd := benchfmt.NewReader(bytes.NewReader(block), "")
	n := 0
	for rd.Scan() {
		if r, ok := rd.Result().(*benchfmt.Result); ok {
			got := string(r.Name)
			if got != short {
				rest, ok := strings.CutPrefix(got, short+"-")
				if _, err := strconv.Atoi(rest); !ok || err != nil {
					return fmt.Errorf("a result of %q in the output of %q", "Benchmark"+got, key)
				}
			}
			if p := r.GetConfig("pkg"); p != "" && p != pkg {
				return fmt.Errorf("a result of package %q in the output of %q", p, key)
			}
			n++
		}
		// A syntax error (a benchmark's own log line that looks like a
		// result) is not counted: --count says how many results there are.
	}
	if err := rd.Err(); err != nil {
		return fmt.Errorf("the output of %q: %w", key, err)
	}
	if n != count {
		return fmt.Errorf("the output of %q holds %d results, want %d (--count)", key, n, count)
	}
	return nil
}

// ReadFile reads the file at path, refusing one larger than MaxFile or
// HOTBUDGET_MAX_BYTES, whichever is lower, before reading it whole.
func ReadFile(path string) ([]byte, error) {
	limit, err := membudget.InputLimit(0)
	if err != nil {
		return nil, err
	}
	limit = min(limit, MaxFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %s: %w (%s sets a lower limit)", path, membudget.SizeString(limit), membudget.ErrTooLarge, membudget.InputEnv)
	}
	return b, nil
}

// firstDifference names the first benchmark a and b disagree on.
func firstDifference(a, b []string) string {
	for i := range max(len(a), len(b)) {
		switch {
		case i >= len(a):
			return fmt.Sprintf("first difference: %q only in the other", b[i])
		case i >= len(b):
			return fmt.Sprintf("first difference: %q only in this one", a[i])
		case a[i] != b[i]:
			return fmt.Sprintf("first difference: %q against %q", a[i], b[i])
		}
	}
	return "the same"
}
