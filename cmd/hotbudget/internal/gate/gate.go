// Package gate is hotbudget record's engine: what to measure (Config), what
// was measured (Measurement: per benchmark and side, runs, counts,
// allocations and benchmark results, with what they depend on) and the one
// judgement of it (Judge, a Verdict), whether the measurement came from
// record's runs, from the shards merge reads or from a base in the history.
// The command maps its flags to a Config and a Judgement, and a Verdict to
// an exit code and its writers.
package gate

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"

	"github.com/hotbudget/hotbudget/bench"
	"github.com/hotbudget/hotbudget/diff"
)

// Exit codes a verdict maps to.
const (
	exitOK   = 0 // nothing regressed
	exitFail = 1 // something regressed
)

// Env is where the engine says what it does and reads its environment.
type Env struct {
	Stderr io.Writer           // progress and warnings, a line each
	Getenv func(string) string // the environment (HOTBUDGET_SAMPLER...)
}

// Record builds and runs the benchmarks of the revisions base and head as
// cfg says and returns what it measured. A shard's measurement (cfg.Shard)
// is written with WriteShard, not judged.
func Record(ctx context.Context, cfg Config, env Env, base, head string) (*Measurement, error) {
	r := &recorder{env: env, o: cfg}
	if cfg.Shard.N > 0 {
		r.shard = &shardLog{}
	}
	res, err := r.run(ctx, base, head)
	if res != nil {
		res.cfg, res.shard = cfg, r.shard
	}
	return res, err
}

// Judgement is how a measurement is judged: the comparisons' options,
// which the command builds from its flags, and what the gate covers.
type Judgement struct {
	Diff  []diff.Option  // the functions' comparison
	Bench []bench.Option // the benchmark results'
	// GateModules gates the functions of the measurement's modules: no
	// --gate or --module was given.
	GateModules bool
	// What names the functions gated ("--gate X"), Modules the modules
	// and Gate the filter, for the error when none of them was judged;
	// "" names the measurement's modules, gated by default.
	What, Gate string
	Modules    []string
}

// Verdict is the judgement of a measurement: the verdict line, the exit
// code it maps to, and every report behind it.
type Verdict struct {
	Line    string // the verdict, the report's first and last line
	Exit    int    // 0 nothing regressed, 1 something did
	Funcs   []*diff.Report
	Benches *bench.Report
	Allocs  []*diff.AllocReport
	m       *Measurement
}

// Counted reports whether the verdict is of counted instructions (or
// cycles) rather than time.
func (v *Verdict) Counted() bool { return v.m.cfg.Instructions }

// Judge judges every benchmark of m at once (one false-discovery control
// over all of them): record calls it on its runs, merge on the union of
// its shards'.
func Judge(m *Measurement, j Judgement) (*Verdict, error) {
	if m.shard != nil {
		return nil, errors.New("a shard is not judged: hotbudget merge judges every shard's output as one record")
	}
	m.why = m.cfg.Why
	if j.What == "" {
		j.What, j.Modules = "the comparison", nil
		if len(m.modules) > 0 {
			j.What, j.Modules = "the functions of "+strings.Join(m.modules, " ")+" (the module gated by default; --gate . gates every function)", m.modules
		}
	}
	if m.cfg.Instructions {
		if err := exactUnmatched(m.exact, j.What, j.Modules, j.Gate); err != nil {
			return nil, err
		}
		v := &Verdict{Line: exactSummary(m.exact), m: m}
		if len(exactFailed(m.exact)) > 0 {
			v.Exit = exitFail
		}
		return v, nil
	}
	opts := j.Diff
	if j.GateModules && len(m.modules) > 0 {
		opts = append(opts[:len(opts):len(opts)], diff.WithGate(ModulePattern(m.modules)))
	}
	if m.baseHistory != nil {
		// The program's time per op of a base measured at another time
		// measures the machine's drift as much as the code (a function's
		// share does not): shown, not judged, as for a baseline of
		// another machine (docs/history.md).
		opts = append(opts[:len(opts):len(opts)], diff.WithHeadline(false))
	}
	funcs, err := diff.CompareEach(m.pairs, opts...)
	if err != nil {
		return nil, err
	}
	if err := GateUnmatched(funcs, j.What, j.Modules, j.Gate); err != nil {
		return nil, err
	}
	benches, err := bench.Compare(bytes.NewReader(m.baseBench), bytes.NewReader(m.headBench), j.Bench...)
	if err != nil {
		return nil, err
	}
	if m.baseHistory != nil {
		m.timeShown = ungateMeasuredTime(benches)
	}
	// The libraries' messages name Go options; record's user has flags.
	for _, r := range funcs {
		FlagWords(r)
	}
	BenchWords(benches)
	v := &Verdict{Funcs: funcs, Benches: benches, Allocs: compareAllocs(m.allocs), m: m}
	v.Line, v.Exit = recordVerdict(v.Funcs, v.Benches, v.Allocs)
	return v, nil
}

// Write writes the verdict's report in format (text, markdown or json);
// full writes every table, not only what was judged and flagged.
func (v *Verdict) Write(w io.Writer, format string, full bool) error {
	if v.Counted() {
		return v.writeCounted(w, format)
	}
	return v.writeTime(w, format, full)
}

// Markdown writes the Markdown comment of a time verdict (the job
// summary GitHub shows).
func (v *Verdict) Markdown(out *bytes.Buffer, full bool) error {
	return v.markdownTime(out, full)
}

// Top is the benchmark report that needs attention first (its HTML report
// is the one written); nil for a counted verdict.
func (v *Verdict) Top() *diff.Report {
	if len(v.Funcs) == 0 {
		return nil
	}
	return ordered(v.Funcs)[0]
}

// TopAllocs is the allocation report that needs attention first; nil
// when there is none.
func (v *Verdict) TopAllocs() *diff.AllocReport {
	if len(v.Allocs) == 0 {
		return nil
	}
	return orderedAllocs(v.Allocs)[0]
}

// Runs is the number of benchmarks compared at both revisions.
func (m *Measurement) Runs() int {
	if m.cfg.Instructions {
		return len(m.exact)
	}
	return len(m.pairs)
}

// Revisions names the base and head revisions.
func (m *Measurement) Revisions() (base, head string) { return m.baseRev.String(), m.headRev.String() }

// Modules are the modules record ran in (go list -m).
func (m *Measurement) Modules() []string { return m.modules }
