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
// does), by name and source file (KeyNameFile: the file reduced
// to its last two path elements, with URL schemes and "@version" suffixes
// dropped, so /home/runner/work/app/... and /tmp/app/... agree), or also by
// start line (KeyNameFileLine: only for identical builds, since unrelated
// edits shift lines). Functions that share a key within one profile are
// summed.
//
// A side with nothing to judge is an error, never a pass: when a side's
// selected samples give no function any time (its profiles are empty, or
// Settings.Selection keeps none of their samples, as when a change renamed
// the thread it names), or give none to the functions
// Settings.Only judges, Compare and CompareIndex return an
// *analysis.NoTimeError naming the side and the selection
// (errors.Is(err, analysis.ErrNoTime)); an empty head would otherwise have
// no function that regressed.
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
//     functions present in every run with at least 20 samples a run and
//     1% of either side each have a pooled ratio, head share / base share; the
//     majority of them whose ratios are closest to the median ratio are the
//     yardstick, and a function is measured against the yardstick without
//     itself, so that neither its own change nor another changed function
//     moves it. The yardstick is taken in every run: its summed samples
//     when it has five members or fewer, else the median of its members'
//     log shares (DESeq2's size factors, robust to one member a JIT moved
//     in that run); its own noise counts in the test. Row.Scale is how
//     much the yardstick moved, and Head.Metric is shown corrected for it,
//     so that Relative = Head/Base − 1 agrees with the values shown. With
//     fewer than three such functions, each function is compared with the
//     rest of its profile instead. Either way a function that alone got
//     20% slower shows about +20%, however large it is.
//   - Absolute: time per run (mean over runs).
//   - PerOp: time per operation (WithOps).
//   - PerAnchor: time per unit of an anchor function's total time
//     (WithAnchor).
//
// # Significance
//
// The noise of a profile is the same problem as read counts per gene in
// RNA-seq: counts per function, a size per run, noise between runs beyond
// sampling, few runs and thousands of functions. Compare borrows strength
// across the functions of the comparison, as DESeq2, edgeR and limma do
// across genes, and then does what profiles need beyond them.
//
// The model: a function's samples in a run vary by sampling (Poisson) and
// by a run-to-run dispersion φ (the squared coefficient of variation of its
// rate between runs: a JIT, caches, a busy machine). On the log scale a
// run's value has variance about 1/samples + φ.
//
// Several runs a side (AssumeModel, the default): φ is learned from the
// residuals of every function with enough samples (calibrated on their
// median, so the functions that changed do not inflate it); each
// function's own variance is moderated toward a prior fitted across all
// functions (limma's empirical Bayes, with a trend over a function's
// samples when they span enough of it), and the moderated t statistic has
// the runs' residual degrees of freedom plus the prior's. Moderation only
// ever raises a variance: a function whose runs spread more than the prior
// says (a JIT that compiles it one way in some runs and another in others)
// keeps its own, with its own degrees of freedom. AssumeNothing and
// AssumeNormal test each function with only its own runs (Mann–Whitney U,
// Welch's t-test; benchmath); five runs a side give Mann–Whitney no
// p-value below 1/252.
//
// One run a side: the spread of all functions' log ratios between the two
// profiles is fitted as Student's t, a dispersion and a tail weight by
// maximum likelihood (a few functions move far more than the rest from run
// to run), never below a 5% coefficient of variation; each function is
// tested against it, and the report says what change it could have seen.
// Exact data (duration events, trace regions) has no sampling noise: with
// one run a side the minimum effect alone decides; with several, the runs'
// spread.
//
// V8 inlines a callee into its caller in some runs and not in others, and
// the callee's samples then count for the caller: one function's self time
// rises as a neighbour's falls. With several runs a side, a neighbour (a
// direct caller, or the direct callees under it) whose time moves against
// the function's from run to run is judged together with it, and a change
// stands only if their sum changed too; with one run a side, a neighbour
// that moved the other way by half as much, significantly, explains the
// change.
//
// The gate asks "is it slower?": p-values are one-sided. Many functions
// are tested at once. The family is every function present on both sides
// that is large enough on one of them for its change to reach the absolute
// minimum (MinShare, default 0.5 share points; MinAbsolute, default 1 ms,
// in the absolute and per-operation modes): chosen by size, never by the
// observed change. Weighted Benjamini–Hochberg keeps the expected share of
// false alarms among the functions reported slower (and, apart, among
// those reported faster) at Alpha (default 0.05); a function's weight grows
// with how small a relative change of it could count (a function of 0.5%
// of the profile must double to move 0.5 share points, one of 5% needs
// 10%), so the many small functions of a real profile do not hide a large
// one. Row.Q is the adjusted p-value. Then the minimum effect, both
// relative (MinRelative, default 10%) and absolute, must be reached.
//
// A function is Regressed when Q < Alpha, both minimum effects are reached
// and it got slower; Improved likewise when it got faster. New and Gone
// are functions present on one side only, at least as large as the
// absolute minimum; smaller ones are Unchanged. A function renamed in the
// change is gone and new unless WithRename pairs the names; the report
// warns of a gone and a new function in the same file.
//
// # Allocations
//
// Heap and allocation profiles (Go's alloc_space, alloc_objects,
// inuse_space, inuse_objects, chosen by Selection.SampleType; V8's
// sampling heap profiles) are compared as time is, in bytes or objects
// (Side.Unit), and judged statistically, never as exact: a Go profile
// sampled at the runtime's default rate holds estimates scaled up from
// about one sampled allocation per 512 KiB, V8's from one per
// --heap-prof-interval. The count the noise model treats as Poisson is
// the number of allocations sampled, not the estimate: for Go, each
// stack's objects times 1-exp(-mean size/rate), the runtime's scaling
// undone (pbuild.Value.Count; with every allocation recorded, rate 1, the
// objects themselves); for V8, the samples array's entries at each node.
// As for CPU profiles, a run's value over its count is what one sample
// stands for, and a function's value over it its effective samples: for
// allocated bytes at the default rate each sample stands for about 512
// KiB whatever the function, so the effective samples are its sampled
// allocations. (For objects a sample of small objects stands for more of
// them than one of large objects, so counts of objects are approximate;
// compare bytes where the rate is not 1.) MinAbsolute, a time, does not
// apply to bytes or objects: the report says so and the relative minimum
// decides.
//
// # The whole program
//
// Shares cannot see a program that got slower everywhere. Report.Headline
// judges the time per unit of work (time without idle time): per
// iteration of a perfassert capture or per benchmark operation (the work
// each run did, recorded in the profile), per operation (WithOps), or per
// run when both sides did the same work (WithSameWork, --same-work). With
// several runs a side a t-test on the runs' log times; with one, an
// assumed 10% coefficient of variation. Without a declared unit of work the
// change is shown, not judged. Report.Failed is the gate: a regressed
// function or a regressed headline.
//
// Sampled time moves between functions when a change removes work: with
// an allocation gone from google/uuid's Parse its benchmark ran 67.5%
// faster and Parse's own samples grew 72% an operation while it executed
// the same instructions (testdata/record/uuid-moved). So when the
// headline improved, a function whose time per unit of work grew by less
// than the whole program's fell is a near miss with Row.MovedIn, not a
// regression. The cost: a real slowdown of a function hidden inside a
// larger saving of the same operation is shown, not failed; an operation
// without the saving, or counted instructions, still catch it.
//
// # Power
//
// For every regressed or suspicious function (as large as the minimum
// change, not shown to be real) and for the headline, the report gives
// the smallest slowdown the runs at hand would detect with 80%
// probability were it the only change (Row.MinDetectable) and the runs a
// side that would detect the minimum change (Row.RunsNeeded).
//
// # What it was checked on
//
// cmd/verdictbench measures false alarms and power on real recordings
// under testdata/verdict (acorn and js-yaml under Node at 100 µs and
// 1000 µs, two Go programs, a real one-function change and a whole program
// made 15% slower) and on regressions injected into real runs; its quick
// mode is a test. The constants of the model (model.go) are its
// assumptions, each documented there; they were not tuned to one data set.
//
// # Reports
//
// Report.Write writes a report in a format: "text", a benchstat-like
// table, regressions first; "markdown", a pull-request comment; "json", a
// stable schema ("schema": "hotbudget.diff/v3"), each
// function's verdict, p, q and change. Each regressed or improved function
// is explained (Row.Explain, Explanation): its change split over the call
// paths it comes through, each path judged with the same test as the
// function. "html" is one self-contained page with the verdicts, the
// explanations and a differential flame graph. ToPprof exports the difference in
// pprof's -diff_base convention. `go test -bench` outputs are judged by
// package bench, with the same verdicts, telling benchmarks apart by
// package and configuration as benchstat does.
package diff
