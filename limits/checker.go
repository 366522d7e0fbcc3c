package limits

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hotbudget/hotbudget/internal/harness"
	"github.com/hotbudget/hotbudget/internal/textfmt"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/suggest"
)

// A Checker checks limits on one or more profiles, indexed once
// (analysis.Index), so that any number of checks under any selection cost
// one pass over the samples apiece. Budget files check all their limits on
// one Checker; Check is a Checker of one profile.
//
// Several profiles are runs of one program, as a budget's are, and are
// pooled (profile.Merge) into one index: a time is the pooled time divided
// by the number of profiles, i.e. the mean per profile (a run without the
// function counts as zero); a share is of the time of all profiles pooled
// (each profile weighs as much as it lasted); PerIteration divides the time
// of all profiles by the work of all of them. Functions are matched across
// profiles as analysis identifies them, so the profiles must have the same
// sample types.
//
// A Checker does not modify its profiles, and is safe for concurrent use.
type Checker struct {
	pooled  *profile.Profile // the profile, or the profiles merged
	index   *analysis.Index  // of pooled
	records []meta.Record    // of each profile (zero when it has none)

	mu     sync.Mutex
	tables map[string]*analysis.Table // by selection, in words; read-only

	// The runs of a single profile, for how a time varies across them
	// (runIndexes), and their tables by selection (runTable).
	runsOnce  sync.Once
	runs      []*analysis.Index
	runsErr   error
	runTables map[string][]*analysis.Table
}

// table is the index's table under sel, made once per selection.
func (ck *Checker) table(sel analysis.Selection) (*analysis.Table, error) {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	k := sel.String()
	if t, ok := ck.tables[k]; ok {
		return t, nil
	}
	t, err := ck.index.Table(sel)
	if err != nil {
		return nil, fmt.Errorf("perfassert: %w", err)
	}
	if ck.tables == nil {
		ck.tables = map[string]*analysis.Table{}
	}
	ck.tables[k] = t
	return t, nil
}

// NewChecker indexes profiles for checking. It fails on no profiles, a nil
// one, profiles that cannot be pooled (different sample types), or one too
// large to index.
func NewChecker(profiles ...*profile.Profile) (*Checker, error) {
	if len(profiles) == 0 {
		return nil, errors.New("perfassert: no profiles to check")
	}
	ck := &Checker{pooled: profiles[0]}
	for i, p := range profiles {
		if p == nil {
			if len(profiles) == 1 {
				return nil, errors.New("perfassert: nil profile")
			}
			return nil, fmt.Errorf("perfassert: profile %d is nil", i+1)
		}
		r, _ := meta.Known(p)
		ck.records = append(ck.records, r)
	}
	if len(profiles) > 1 {
		// Pooled, the profiles' values must still sum without overflow
		// (pbuild.ValueSums, the rule each profile is held to alone).
		sums := pbuild.NewValueSums(pbuild.ValueTypes(profiles[0]))
		for i, p := range profiles {
			for j, smp := range p.Sample {
				if smp == nil {
					continue
				}
				if err := sums.Add(j, smp.Value); err != nil {
					return nil, fmt.Errorf("perfassert: profile %d: %w", i+1, err)
				}
			}
		}
		merged, err := profile.Merge(profiles)
		if err != nil {
			return nil, fmt.Errorf("perfassert: the %d profiles cannot be pooled: %w", len(profiles), err)
		}
		ck.pooled = merged
	}
	x, err := analysis.NewIndex(ck.pooled)
	if err != nil {
		return nil, fmt.Errorf("perfassert: %w", err)
	}
	ck.index = x
	return ck, nil
}

// which names profile i in messages.
func (ck *Checker) which(i int) string {
	s := "the profile"
	if len(ck.records) > 1 {
		s = fmt.Sprintf("profile %d", i+1)
	}
	if i < len(ck.records) && ck.records[i].Name != "" {
		s += " (" + ck.records[i].Name + ")"
	}
	return s
}

// Check measures the functions fn selects in the Checker's profiles and
// compares them with limit, as the package-level Check does for one
// profile.
func (ck *Checker) Check(fn string, limit Limit, opts ...Option) (*Result, error) {
	c := newConfig(opts)
	if c.err != nil {
		return nil, c.err
	}
	if err := limit.validate(); err != nil {
		return nil, err
	}
	if fn == "" {
		return nil, errors.New("perfassert: empty function selector")
	}
	var work float64
	var unit meta.WorkUnit
	if c.perIteration {
		var err error
		if work, unit, err = ck.work(); err != nil {
			return nil, err
		}
	}
	match := func(name string) bool { return name == fn }
	if c.regexp {
		re, err := regexp.Compile(fn)
		if err != nil {
			return nil, fmt.Errorf("perfassert: selector: %w", err)
		}
		match = re.MatchString
	}
	self := limit.Quantity.isSelf()
	alloc := limit.Quantity.isAlloc()
	if alloc && c.sel.SampleType == "" {
		st, err := allocSampleType(ck.pooled, limit.Quantity)
		if err != nil {
			return nil, err
		}
		c.sel.SampleType = st
	}
	instr := limit.Quantity.isInstr()
	if c.sel.SampleType == "" && !alloc && countsInstructions(ck.pooled) {
		c.sel.SampleType = defaultCount(ck.pooled, limit.Quantity)
	}
	if instr && c.sel.SampleType == "" {
		st, err := instrSampleType(ck.pooled, limit.Quantity)
		if err != nil {
			return nil, err
		}
		c.sel.SampleType = st
	}
	t, err := ck.table(c.sel)
	if err != nil {
		return nil, err
	}
	// Shares of counted instructions are shares of the program's
	// instructions.
	instrShare := limit.Quantity.isShare() && isCounted(c.sel.SampleType) && t.Unit == analysis.UnitCount
	switch {
	case alloc && t.Unit != limit.Quantity.allocUnit():
		return nil, fmt.Errorf("perfassert: a limit on %s needs a sample type of %s; %s is %s", limit.Quantity, limit.Quantity.allocUnit(), t.SampleType, t.Unit)
	case instr && t.Unit != analysis.UnitCount:
		return nil, fmt.Errorf("perfassert: a limit on %s needs counted instructions; %s is %s", limit.Quantity, t.SampleType, t.Unit)
	case !alloc && !instr && !instrShare && t.Unit != analysis.UnitTime && countsInstructions(ck.pooled):
		return nil, fmt.Errorf("perfassert: %w: the profile counts instructions (%s); bound them with MaxSelfInstructions or MaxTotalInstructions, or their shares", analysis.ErrWrongUnit, t.SampleType)
	case !alloc && !instr && !instrShare && t.Unit != analysis.UnitTime:
		return nil, fmt.Errorf("perfassert: %w: %s (%s); bound allocations with MaxAllocs or MaxAllocBytes", analysis.ErrWrongUnit, t.SampleType, t.Unit)
	}
	// No time, no verdict: an empty profile, or a selection that leaves
	// nothing, is an error even with AllowMissing (analysis.CheckTime).
	if err := analysis.CheckTime("", c.sel, []*analysis.Index{ck.index}, []*analysis.Table{t}); err != nil {
		var e *analysis.NoTimeError
		if errors.As(err, &e) {
			e.Profiles = len(ck.records) // pooled into one index
		}
		return nil, fmt.Errorf("perfassert: %w", err)
	}
	stacks, err := ck.index.Through(t, match, self, c.sel)
	if err != nil {
		return nil, fmt.Errorf("perfassert: %w", err)
	}
	n := len(ck.records)
	rows := perProfile(t.Functions, n)
	r := &Result{
		Check:           limit.Quantity.checkName(),
		Profile:         c.profileName(ck),
		Selector:        fn,
		Regexp:          c.regexp,
		Limit:           limit,
		Selection:       c.sel,
		Functions:       len(rows),
		Total:           t.Total,
		TotalSamples:    t.TotalSamples,
		Exact:           t.Exact,
		Unit:            t.Unit,
		Profiles:        n,
		ProfileWarnings: t.Warnings,
	}
	names := map[string]bool{}
	for _, f := range rows {
		if match(f.Name) {
			r.Matched = append(r.Matched, f)
			names[f.Name] = true
		}
	}
	r.Names = len(names)
	r.Top = topFunctions(rows, self, topN)
	race, raceKnown := ck.race()
	r.Race = race
	skipRace := c.skipRace && (race || !raceKnown && raceEnabled)
	cpu := ck.cpu()
	r.LostSamples = cpu.SamplesLost()

	if len(r.Matched) == 0 {
		r.Missing = true
		r.Passed = c.allowMissing
		cands := make([]suggest.Candidate, len(rows))
		for i, f := range rows {
			cands[i] = suggest.Candidate{Name: f.Name, Weight: f.Self}
		}
		r.Suggestions = suggest.Closest(fn, c.regexp, cands, 5)
		return r, nil
	}

	judged := match
	if c.eachMatch && len(names) > 1 {
		worst := worstName(t, stacks, match, self)
		judged = func(name string) bool { return name == worst }
		r.EachMatch = true
		r.Matched = slices.DeleteFunc(r.Matched, func(f analysis.Function) bool { return f.Name != worst })
	}
	var pooled int64
	pooled, r.Samples, r.Stacks = measure(t, stacks, judged, self)
	r.Value = pooled / int64(n) // the mean per profile
	if r.Total > 0 {
		r.Share = float64(pooled) / float64(r.Total)
		for i := range r.Stacks {
			r.Stacks[i].Share = float64(r.Stacks[i].Value) / float64(r.Total)
			r.Stacks[i].Value /= int64(n)
		}
	}
	if !r.Exact && ck.counted(c.sel.SampleType) && r.Samples < minSamples {
		r.FewSamples = true
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"only %d samples in the measured %s: a sampled measurement this small is noise (±%.0f%%); profile for longer (Capture: MinSamples)",
			r.Samples, limit.Quantity, relErr(r.Samples)*100))
	}
	if !limit.Quantity.isShare() {
		if c.perIteration {
			r.Iterations, r.WorkUnit = int64(math.Round(work)), string(unit)
			r.Value = int64(float64(pooled) / work)
		} else if w, u, err := ck.work(); err == nil && u == meta.WorkIteration {
			r.Warnings = append(r.Warnings, fmt.Sprintf(
				"the profile holds %d runs of a captured function: the time is their sum, which depends on how long the capture ran; PerIteration() bounds the time per run", int64(math.Round(w))))
		}
		if r.LostSamples && !alloc {
			r.Warnings = append(r.Warnings, cpu.LostSamplesWarning())
		}
	}
	if alloc && t.SampleBytes > 1 {
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"the profile sampled one allocation per %s allocated on average: the values are the runtime's estimates from %d sampled allocations, not exact counts; record with runtime.MemProfileRate = 1 (go test -memprofilerate=1) for exact ones",
			textfmt.Bytes(float64(t.SampleBytes)), r.Samples))
	}
	if limit.Quantity.isShare() {
		r.Passed = r.Share <= limit.Share
	} else if alloc || instr {
		// Counts do not depend on the race detector or the machine.
		// Compared before Value rounds them to whole objects or bytes:
		// 1.5 allocations per run exceed a limit of 1.
		per := float64(n)
		if c.perIteration {
			per = work
		}
		r.Passed = float64(pooled)/per <= float64(limit.Count)
	} else {
		// A time: the unit checked above.
		r.Passed = time.Duration(r.Value) <= limit.Time
		switch {
		case skipRace:
			r.SkippedRace = !r.Passed
			r.Passed = true
		case r.Race && !r.Passed:
			r.Warnings = append(r.Warnings, "the profile was captured with the race detector on (go test -race), which slows code several times over: a time limit chosen without it rarely holds; perfassert.SkipUnderRace() checks it only without -race")
		}
		// How the value varies across the capture's runs, and the limit
		// that would hold (issue 32). Not under the race detector, whose
		// times no limit is chosen for, nor for a capture's time summed
		// over its runs, which depends on how long it ran (warned above).
		if !r.Race && (c.perIteration || !ck.capturedIterations()) {
			h, few, err := ck.runHeadroom(r, c.sel, judged, self, c.perIteration)
			switch {
			case err != nil:
				r.Warnings = append(r.Warnings, fmt.Sprintf("cannot tell how the value varies across the profile's runs: %v", strings.TrimPrefix(err.Error(), "perfassert: ")))
			default:
				r.headroom, r.tooFewRuns = h, few
			}
		}
	}
	return r, nil
}

func (c *config) profileName(ck *Checker) string {
	switch {
	case c.name != "":
		return c.name
	case len(ck.records) > 1:
		return fmt.Sprintf("%d profiles", len(ck.records))
	case ck.records[0].Name != "":
		return ck.records[0].Name
	}
	return "profile"
}

// work is the work all profiles record, summed, and its unit. Every run of
// every profile must record some, in one unit.
func (ck *Checker) work() (float64, meta.WorkUnit, error) {
	var sum float64
	unit, from := meta.WorkUnit(""), 0
	for i, rec := range ck.records {
		var w float64
		for _, r := range rec.Runs {
			if !(r.Work > 0) {
				w = 0
				break
			}
			w += r.Work
		}
		u := rec.WorkUnit
		if u == "" {
			u = meta.WorkIteration // Capture's, before records named it
		}
		if !(w > 0) {
			return 0, "", fmt.Errorf("perfassert: time per unit of work (PerIteration, per-op budget limits) needs the work a profile records, and %s records none: perfassert.Capture (iterations) and hotbudget record (benchmark ops) write it", ck.which(i))
		}
		if unit != "" && u != unit {
			return 0, "", fmt.Errorf("perfassert: time per unit of work (PerIteration, per-op budget limits) needs one unit, and %s counts its work in %ss, %s in %ss", ck.which(from), unit, ck.which(i), u)
		}
		if unit == "" {
			unit, from = u, i
		}
		sum += w
	}
	return sum, unit, nil
}

// capturedIterations reports whether the profiles' work counts iterations
// of a captured function (perfassert.Capture's runs).
func (ck *Checker) capturedIterations() bool {
	_, u, err := ck.work()
	return err == nil && u == meta.WorkIteration
}

// race reports whether a profile was captured with the race detector on,
// and whether any profile says.
func (ck *Checker) race() (race, known bool) {
	for _, r := range ck.records {
		if r.Build != "" {
			known = true
			race = race || r.Race
		}
	}
	return race, known
}

// cpu pools the CPU time the samples of the profiles that measured it stand
// for, and the CPU time their processes used while capturing (the
// record's SampledNanos and UsedNanos).
func (ck *Checker) cpu() meta.Record {
	var pooled meta.Record
	for _, r := range ck.records {
		if r.SampledNanos > 0 && r.UsedNanos > 0 {
			pooled.SampledNanos += r.SampledNanos
			pooled.UsedNanos += r.UsedNanos
		}
	}
	return pooled
}

// counted reports whether the profiles count samples besides their time
// (a count value), so that too few of them can be told.
func (ck *Checker) counted(sampleType string) bool {
	_, ci, _, err := pbuild.ValueIndex(ck.pooled, sampleType)
	return err == nil && ci >= 0
}

// perProfile is the rows of the pooled table of n profiles as means per
// profile: values divided by n; samples and shares stay those of the pool.
func perProfile(rows []analysis.Function, n int) []analysis.Function {
	if n == 1 {
		return rows
	}
	out := slices.Clone(rows)
	for i := range out {
		f := &out[i]
		f.Self, f.Total, f.Local = f.Self/int64(n), f.Total/int64(n), f.Local/int64(n)
	}
	return out
}

// worstName returns the name match accepts with the most time in the
// stacks (as the leaf when self), ties to the first name in sorted order.
func worstName(t *analysis.Table, stacks []analysis.RowStack, match func(string) bool, self bool) string {
	sum := map[string]int64{}
	var seen []string
	fs := t.Functions
	for _, s := range stacks {
		if self {
			if name := fs[s.Frames[0]].Name; match(name) {
				sum[name] += s.Value
			}
			continue
		}
		seen = seen[:0]
		for _, f := range s.Frames {
			if name := fs[f].Name; match(name) && !slices.Contains(seen, name) {
				seen = append(seen, name)
				sum[name] += s.Value
			}
		}
	}
	worst := ""
	for name, v := range sum {
		if worst == "" || v > sum[worst] || v == sum[worst] && name < worst {
			worst = name
		}
	}
	return worst
}

// measure sums the stacks through a function judged accepts (as the leaf
// when self): their time and samples, each stack counted once, and the
// heaviest of them merged by function names, harness frames at the root
// end left out.
func measure(t *analysis.Table, stacks []analysis.RowStack, judged func(string) bool, self bool) (int64, int64, []Stack) {
	var (
		pooled  int64
		samples int64
		byNames = map[string]int{}
		out     []Stack
		names   []string
	)
	fs := t.Functions
	for _, s := range stacks {
		names = names[:0]
		for _, f := range s.Frames {
			names = append(names, fs[f].Name)
		}
		through := -1
		if self {
			if judged(names[0]) {
				through = 0
			}
		} else {
			for i, name := range names {
				if judged(name) {
					through = i
				}
			}
		}
		if through < 0 {
			continue
		}
		pooled += s.Value
		samples += s.Samples
		// Harness frames (testing.tRunner, ...) at the root end say
		// nothing about the code: leave them out.
		cut := len(names)
		for cut > through+1 && harness.IsFrame(names[cut-1]) {
			cut--
		}
		k := strings.Join(names[:cut], "\x00")
		i, ok := byNames[k]
		if !ok {
			i = len(out)
			byNames[k] = i
			out = append(out, Stack{Frames: slices.Clone(names[:cut]), Through: through})
		}
		out[i].Value += s.Value
	}
	slices.SortFunc(out, func(a, b Stack) int {
		return cmp.Or(cmp.Compare(b.Value, a.Value), slices.Compare(a.Frames, b.Frames))
	})
	if len(out) > stacksN {
		out = out[:stacksN]
	}
	return pooled, samples, out
}
