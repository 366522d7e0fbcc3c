// Package diff compares a current profile (or several runs) with a baseline,
// function by function, and gives each function a verdict that holds up
// against noise: regressed, improved, unchanged, new or gone.
//
// pprof's -diff_base subtracts but never judges; benchstat judges whole
// benchmarks but not functions. Compare does both: it measures every
// function's self or total time on each side (package analysis, pprof's flat
// and cum), normalises, tests, and decides.
//
// # Matching
//
// Base and head come from different checkouts and builds. Functions are
// matched by Settings.Key: by name alone (KeyName, the default, as pprof
// does), by name and source file (KeyNameFile: the file reduced by CleanPath
// to its last two path elements, with URL schemes and "@version" suffixes
// dropped, so /home/runner/work/app/... and /tmp/app/... agree), or also by
// start line (KeyNameFileLine: only for identical builds, since unrelated
// edits shift lines). Functions that share a key within one profile are
// summed.
//
// # Normalisation
//
// Times are compared, never raw sample counts, so profiles sampled every
// 100 µs and every 1000 µs compare correctly. Modes:
//
//   - Share (default): each function's share of its profile's total. Run
//     length and the overhead a finer sampling interval adds to the whole
//     program cancel out. When some functions change, every other share
//     moves the opposite way; to keep an improvement in one function from
//     showing as a regression in all the others, each function is measured
//     against a yardstick, assuming most functions did not change. The
//     functions holding at least 5% of either side (1% when fewer than
//     three do) each have a pooled ratio, head share / base share; the
//     majority of them whose ratios are closest to the median ratio are the
//     yardstick, and a function is measured against the yardstick without
//     itself, so that neither its own change nor another changed function
//     moves it. In every run, the function's share is divided by the
//     yardstick's share in that run relative to its share over all runs, so
//     the yardstick's own run-to-run noise reaches the test instead of being
//     taken as exact. Row.Scale is how much the yardstick moved. With fewer
//     than three such functions, each function is compared with the rest
//     of its profile instead. Either way a function that alone got 20%
//     slower shows about +20%, however large it is.
//   - Absolute: time per run (mean over runs).
//   - PerOp: time per unit of work: per unit of an anchor function's total
//     time (WithAnchor), or per operation (WithOps).
//
// # Significance
//
// One profile a side: sample counts are binomial (shares: a two-proportion
// test on the function's samples out of its own and its yardstick's, so
// that the yardstick's sampling noise counts as well as the function's;
// out of the profile's when it is compared with the rest) or Poisson
// (absolute time: a conditional binomial test weighted by the two sampling
// rates), so a function seen in 3 samples cannot be said to have doubled.
// Only sampling noise is modelled then, and the report says so: run-to-run
// noise (a JIT moving time between caller and callee, a busy machine) needs
// several runs. Exact data (duration events, trace regions) has no sampling
// noise: the minimum effect alone decides.
//
// Several runs a side (at least two each): per function, a Mann–Whitney U
// test over the runs' normalised values (benchmath.AssumeNothing), whose
// warnings about too few runs are passed on; or, when the caller assumes
// the values normally distributed (Settings.Assume, WithAssumption),
// Welch's t-test (benchmath.AssumeNormal), whose p-values do not stop at
// what five runs can show. Five runs a side is about the
// least that can show a change at the default Alpha, 0.05, once several
// functions are tested.
// Sampled runs must also show the change beyond the sampling noise of their
// samples pooled over the runs (the one-run test at Alpha), so that runs
// of a function seen in a handful of samples each, far apart by chance, are
// not called changed.
// The test sees run-to-run noise, but not a drift that affects every run of
// one side alike (a machine that warms up while the base runs): interleave
// the runs of the two sides.
//
// Many functions are tested at once. The family is every function present
// on both sides that is large enough on one of them for its change to reach
// the absolute minimum (MinShare, default 0.5 share points; MinAbsolute,
// default 1 ms, in the absolute and per-operation modes): it is chosen by
// size, never by the observed change, since keeping only the functions that
// moved most would shrink the correction and let noise through. Within it,
// the Benjamini–Hochberg procedure keeps the expected share of false alarms
// among the functions reported slower (and, apart, among those reported
// faster) at Alpha (default 0.05): Row.Q is the adjusted p-value. Then the
// minimum effect, both relative (MinRelative, default 10%) and absolute,
// must be reached.
//
// What that means in practice: when nothing changed, a comparison flags
// something with probability at most about Alpha, and far less when every
// sizeable function's run-to-run noise is well below MinRelative. With five
// runs a side the smallest Mann–Whitney p-value is 0.008, so a regression
// can be flagged only when nearly every head run is slower than every base
// run; with more than about six sizeable functions moving the same way, not
// even then: take more runs, or AssumeNormal (in a simulation of twenty
// functions of 5%, five runs of 2000 samples and one function 50% slower,
// Mann–Whitney flagged it in 8% of comparisons and Welch's t-test in 93%,
// with false alarms still below Alpha). Noise is not only sampling: on Node a hot
// function's self time varies by up to a third from run to run (JIT), and
// a profiler sampling every 100 µs slows the whole program by about 16%
// (Share mode absorbs the latter).
//
// A function is Regressed when Q < Alpha, both minimum effects are reached
// and it got slower; Improved likewise when it got faster. New and Gone are functions present on one side only,
// at least as large as the absolute minimum; smaller ones are Unchanged.
//
// # Reports
//
// WriteText prints a benchstat-like table, regressions first; WriteMarkdown
// a pull-request comment; WriteJSON a stable schema (SchemaVersion), each
// function's verdict, p, q and change. Each regressed or improved function
// is explained (Row.Explain, Explanation): its change split over the call
// paths it comes through, each path judged with the same test as the
// function. WriteHTML writes one self-contained page with the verdicts, the
// explanations and a differential flame graph. ToPprof exports the difference in
// pprof's -diff_base convention; CompareBench judges `go test -bench`
// outputs with the same engine.
package diff
