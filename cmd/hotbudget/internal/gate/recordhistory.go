package gate

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/history"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"github.com/hotbudget/hotbudget/internal/valgrind"
)

// record --base-from-history (issue 34): a pull request's base is a commit
// of the main branch, whose record 'hotbudget history append' stored when it
// was pushed. Counted instructions are exact, so the stored counts of the
// base are what measuring it again would give: record builds and counts the
// head alone and judges it against them (diff.CompareCounts, as always).
// Time keeps each run as its verdict reads it (historyruns.go): record
// runs the head alone, as many times and iterations as the base ran, and
// judges it against the stored runs with the statistics of a measured
// base, when the record is recent and of the same kind of machine.

// DefaultHistoryMaxAge is the oldest record of time --base-from-history
// takes by default (docs/history.md has the measurements).
const DefaultHistoryMaxAge = 24 * time.Hour

// historyBase reads the record of base's commit and checks that it can stand
// for the base: a record of counted instructions with every function's
// exact counts, or of time with its runs, recent enough.
func (r *recorder) historyBase(ctx context.Context, top string, base *recSide) (*history.Record, error) {
	if base.rev.Commit == "" {
		return nil, errors.New("--base-from-history: the base is the working tree, which has no record: give a commit of the main branch")
	}
	store := history.Notes{Dir: top, Ref: r.o.HistoryRef}
	ref := r.o.HistoryRef
	if ref == "" {
		ref = history.DefaultRef
	}
	rec, err := store.Get(ctx, base.rev.Commit)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, fmt.Errorf("--base-from-history: base %s has no record under %s (on a push to main, hotbudget history append --out DIR stores it; in a clone, git fetch origin %s:%s fetches the records): drop --base-from-history to measure the base",
			base.rev, textfmt.Line(ref), textfmt.Line(ref), textfmt.Line(ref))
	}
	if !r.o.Instructions {
		if err := checkTimeHistory(rec, r.o.HistoryMaxAge, time.Now()); err != nil {
			return nil, err
		}
		return rec, nil
	}
	if rec.Instrument != history.InstrumentInstructions {
		return nil, fmt.Errorf("--base-from-history: the record of base %s measured %s, not instructions: counting compares counted instructions only (%s; --instrument time to time the head against it)", base.rev, textfmt.Line(rec.Instrument), r.o.Why)
	}
	for _, b := range rec.Benchmarks {
		if b.Ops > 0 && b.CountTotal != 0 {
			return rec, nil
		}
	}
	return nil, fmt.Errorf("--base-from-history: the record of base %s keeps no exact counts (its functions were pruned: history append --keep-functions; or it was appended by a hotbudget before 0.x that did not store them): drop --base-from-history to measure the base", base.rev)
}

// checkHistoryBuild refuses a stored base counted by another Go or on
// another platform than the head's binaries: the compiler's code, and the
// runtime's, differ.
func checkHistoryBuild(rec *history.Record, head *recSide) error {
	goVersion, platform, _ := strings.Cut(head.build, " ")
	recPlatform, _, _ := strings.Cut(rec.Machine, "; ")
	if rec.Go != goVersion {
		return fmt.Errorf("--base-from-history: the record of base %.12s was counted with %s, the head's binaries are built by %s: a Go release compiles the code into other instructions; measure the base (drop --base-from-history)",
			rec.Commit, textfmt.Line(rec.Go), textfmt.Line(goVersion))
	}
	if recPlatform != platform {
		return fmt.Errorf("--base-from-history: the record of base %.12s was counted on %s, the head is on %s; measure the base (drop --base-from-history)",
			rec.Commit, textfmt.Line(recPlatform), textfmt.Line(platform))
	}
	return nil
}

// checkHistoryMachine refuses a stored base counted on another kind of
// CPU than the head (as go test under callgrind names it): the runtime
// picks its assembly (memmove, IndexByte, hashing) by the CPU's features.
func checkHistoryMachine(rec *history.Record, head *recSide) error {
	if head.cpu == "" || !strings.Contains(rec.Machine, "; ") {
		return nil // a record that names no CPU: the platform was checked
	}
	_, cpu, _ := strings.Cut(rec.Machine, "; ")
	if cpu != head.cpu {
		return fmt.Errorf("--base-from-history: the record of base %.12s was counted on %s, the head on %s: the runtime chooses its code by the CPU's features; measure the base (drop --base-from-history)",
			rec.Commit, textfmt.Line(cpu), textfmt.Line(head.cpu))
	}
	return nil
}

// calibrateFromHistory lists the head's benchmarks (one iteration each)
// and counts each at the iterations the stored base was counted at, so
// that both sides' counts are of the same N ops as measuring the base
// again would give. A benchmark of the head the record lacks is refused.
func (r *recorder) calibrateFromHistory(ctx context.Context, base, head *recSide, rec *history.Record) ([]leaf, error) {
	t0 := time.Now()
	stored := map[string]history.Benchmark{}
	for _, b := range rec.Benchmarks {
		stored[b.Name] = b
	}
	head.leaves, base.leaves = map[string]bool{}, map[string]bool{}
	var leaves []leaf
	var missing []string
	for _, pkg := range sortedKeys(head.bins) {
		out, err := r.runBinary(ctx, head, head.bins[pkg], "-test.bench", r.o.Bench, "-test.benchtime", "1x")
		if err != nil {
			return nil, err
		}
		for _, res := range r.parseBench(out) {
			l := leaf{pkg: pkg, name: res.name}
			head.leaves[l.key()] = true
			b, ok := stored[l.key()]
			if !ok || b.Ops <= 0 || b.CountTotal == 0 {
				missing = append(missing, l.key())
				continue
			}
			// The record's ops are the N of each repetition times the
			// repetitions (exactReps, more where the code missed the
			// runtime's caches): the head repeats N exactReps times, as
			// many ops in all where the base was not repeated more.
			n := max(b.Ops/exactReps, 1)
			if r.o.FixedIters > 0 && r.o.FixedIters*exactReps != b.Ops {
				return nil, fmt.Errorf("--base-from-history: --benchtime %dx, but the record of base %.12s counted %s at %dx (%d repetitions, %d ops): the head is counted at the base's iterations (drop --benchtime)",
					r.o.FixedIters, rec.Commit, textfmt.Name(l.key()), n, exactReps, b.Ops)
			}
			// An op's time from one iteration (its first): what the
			// progress estimates counting from.
			l.iters, l.nsOp = n, res.nsOp
			// Counted at N and 2N ops, each repeated, under callgrind,
			// which runs code about 50 times slower.
			if err := checkHistoryIters(rec, l, res.nsOp, 3*exactReps*callgrindSlowdown, r.o.Budget); err != nil {
				return nil, err
			}
			base.leaves[l.key()] = true
			leaves = append(leaves, l)
		}
	}
	if err := r.historyLeavesErr(rec, "counts", missing, len(leaves), head); err != nil {
		return nil, err
	}
	sort.Slice(leaves, func(i, j int) bool { return leaves[i].key() < leaves[j].key() })
	if err := r.valgrindCPU(ctx, head, leaves[0]); err != nil {
		return nil, err
	}
	if err := checkHistoryMachine(rec, head); err != nil {
		return nil, err
	}
	for _, l := range leaves {
		r.progress("%s %s: counted at %d and %d iterations, the base's from the history", textfmt.Name(l.pkg), textfmt.Name(l.name), l.iters, 2*l.iters)
	}
	var est time.Duration
	for _, l := range leaves {
		est += exactCost(l, exactReps, 1)
	}
	workers := exactWorkers(len(leaves))
	r.progress("listed %s at head in %s; each is counted in two runs under callgrind (N and 2N iterations, %d at once), about %s", plural(len(leaves), "benchmark", "benchmarks"), since(t0), workers, (est / time.Duration(workers)).Round(time.Second))
	return leaves, nil
}

// valgrindCPU runs benchmark l of s once under valgrind without a tool
// (about a second) and keeps the CPU go test names there in s.cpu: the
// CPU valgrind emulates, whose features the runtime chooses its code by,
// and the one a record's counted runs name (countLeaf).
func (r *recorder) valgrindCPU(ctx context.Context, s *recSide, l leaf) error {
	vg, err := valgrind.Find()
	if err != nil {
		return fmt.Errorf("--instructions counts instructions under valgrind: %w", err)
	}
	b := s.bins[l.pkg]
	stdout, stderr, err := underValgrind(ctx, vg, b, valgrind.Run{Tool: "none"}, "-test.run", "^$", "-test.cpu", "1", "-test.bench", l.pattern(), "-test.benchtime", "1x")
	if err != nil {
		return benchFailed(ctx, s, b, err, stdout, stderr)
	}
	if m := cpuLine.FindSubmatch(stdout.Bytes()); m != nil {
		s.cpu = strings.TrimSpace(string(m[1]))
	}
	return nil
}

// historyProfile is the stored counts of benchmark key as the profile of
// the counted difference record would have measured: one sample per
// function, its N ops recorded, exact.
func historyProfile(rec *history.Record, key string) (*profile.Profile, error) {
	var b *history.Benchmark
	for i := range rec.Benchmarks {
		if rec.Benchmarks[i].Name == key {
			b = &rec.Benchmarks[i]
		}
	}
	if b == nil || b.Ops <= 0 || b.CountTotal == 0 {
		return nil, fmt.Errorf("the record of base %.12s lacks the counts of %s", rec.Commit, key)
	}
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "instructions", Unit: "count"}},
		PeriodType:        &profile.ValueType{Type: "instructions", Unit: "count"},
		Period:            1,
		DefaultSampleType: "instructions",
	}
	counts := slices.Clone(b.Counts)
	// The functions the record did not keep (not of CountsOf's modules:
	// not judged) count in the whole, as one.
	rest := b.CountTotal
	for _, c := range counts {
		rest -= c.N
	}
	if rest != 0 {
		counts = append(counts, history.Count{Name: historyRest, N: rest})
	}
	for i, c := range counts {
		id := uint64(i + 1)
		fn := &profile.Function{ID: id, Name: c.Name, SystemName: c.Name}
		loc := &profile.Location{ID: id, Line: []profile.Line{{Function: fn}}}
		p.Function = append(p.Function, fn)
		p.Location = append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{c.N}})
	}
	p.Comments = meta.MarkExact(nil)
	_, name, _ := strings.Cut(key, " ")
	meta.Set(p, meta.Record{Name: fmt.Sprintf("%s at base %.12s (from the history, recorded %s)", name, rec.Commit, rec.Recorded),
		Build: strings.TrimSpace(rec.Go + " " + strings.SplitN(rec.Machine, "; ", 2)[0]), WorkUnit: meta.WorkOp,
		Instrument: "callgrind", Runs: []meta.Run{{Work: float64(b.Ops)}}})
	return p, nil
}

// callgrindSlowdown is about how many times slower code runs under
// callgrind than natively.
const callgrindSlowdown = 50

// historyRest names the functions a record's counts leave out, together.
const historyRest = "(the functions the history did not keep: the runtime's, the standard library's)"

// checkHistoryGate refuses a stored base whose counts leave out functions
// the gate judges: a record keeps the functions of the modules it names
// (CountsOf), what the gate judges by default; --gate or --module judge
// others.
func checkHistoryGate(rec *history.Record, gate *regexp.Regexp, modules []string) error {
	if rec.CountsOf == nil {
		return nil // every function's
	}
	if gate != nil {
		return fmt.Errorf("--base-from-history: the record of base %.12s keeps the counts of the functions of %s only, and --gate or --module judges others: measure the base (drop --base-from-history), or append records with history append --counts all",
			rec.Commit, textfmt.Line(strings.Join(rec.CountsOf, " ")))
	}
	a, b := slices.Sorted(slices.Values(rec.CountsOf)), slices.Sorted(slices.Values(modules))
	if !slices.Equal(a, b) {
		return fmt.Errorf("--base-from-history: the record of base %.12s keeps the counts of the functions of %s, the gate judges those of %s: measure the base (drop --base-from-history)",
			rec.Commit, textfmt.Line(strings.Join(a, " ")), textfmt.Line(strings.Join(b, " ")))
	}
	return nil
}

// historyBaseLine says where the base's counts came from, for the report.
func historyBaseLine(rec *history.Record) string {
	if rec == nil {
		return "base: measured"
	}
	when := rec.Recorded
	if t, err := time.Parse(time.RFC3339, when); err == nil {
		when = t.UTC().Format("2006-01-02T15:04Z")
	}
	return fmt.Sprintf("base: from history (commit %.12s, recorded %s, %s)", rec.Commit, when, rec.Instrument)
}

// historyLeavesErr is the error of a base from the history that lacks
// what (counts, runs) of the head's benchmarks missing, or of a head with
// no benchmark (n == 0); nil otherwise.
func (r *recorder) historyLeavesErr(rec *history.Record, what string, missing []string, n int, head *recSide) error {
	if len(missing) > 0 {
		return fmt.Errorf("--base-from-history: the record of base %.12s lacks the %s of %s (new at head, recorded with another --bench or packages, or pruned): measure the base (drop --base-from-history)",
			rec.Commit, what, textfmt.Line(strings.Join(missing, ", ")))
	}
	if n == 0 {
		return fmt.Errorf("no benchmark matches --bench %q in %s at head %s", r.o.Bench, strings.Join(r.o.Packages, " "), head.rev)
	}
	return nil
}
