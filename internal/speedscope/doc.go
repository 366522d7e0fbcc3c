// Package speedscope reads and writes speedscope's native JSON file format
// (https://www.speedscope.app/file-format-schema.json).
//
// A file holds a shared frame table and one or more profiles that refer to
// frames by their index in that table. Parse streams the file with a JSON
// token reader; profiles are kept as compact typed slices until the frame
// table is known, so "profiles" may come before "shared".
//
// Decisions (pinned by tests):
//
//   - Detection: a "$schema" other than speedscope's is an error; a file
//     without "$schema" is read, with a warning.
//   - Frames: lines and columns are 1-based in speedscope already and are
//     kept as they are. Each frame is a function, as speedscope keeps every
//     frame apart: frames differing in name, file, line or column are distinct
//     functions (the line becomes the function's StartLine, a column is kept
//     in its SystemName), and only frames equal in all four, which no viewer
//     can tell apart, are merged. This keeps the many "(anonymous)"
//     functions of one JavaScript file apart. A missing or empty name becomes
//     "(anonymous)".
//   - Evented profiles come from instrumentation, so their durations are exact:
//     the result is built as exact data (pbuild.Exact). The time between two
//     consecutive events is charged to the stack open at that moment; each
//     closed frame counts as one event (the count value). "at" must be
//     non-decreasing and O/C events balanced and properly nested, and every
//     frame must be closed by the end: otherwise Parse fails with an error
//     naming the profile and the event index, as speedscope does. Time is
//     summed per call path, so the work per event does not grow with depth;
//     the stacks of all call paths may hold at most MaxStackFrames frames.
//   - Sampled profiles: "samples" are root-first stacks of frame indexes and
//     "weights" their durations; both must have the same length; a bad frame
//     index or a negative weight is an error. Each sample has the values
//     [1, weight in nanoseconds]; an empty stack is kept (it adds to the total
//     time but to no function). Period is the median positive weight.
//   - Units: nanoseconds, microseconds, milliseconds and seconds are converted
//     to nanoseconds. "none" (used e.g. by speedscope's own import of folded
//     stacks, whose values are sample counts) is taken as 1 ms per unit, the
//     same assumption as package folded, with a warning. "bytes" is refused:
//     the model holds time, and a memory profile read as time would be
//     misleading.
//   - Several profiles: each sample carries the profile's name (or "profile
//     N" when it has none) as both the "profile" and the "thread" label, so a
//     thread selection picks one profile. By default all profiles are merged.
//     The file's activeProfileIndex is noted in a profile comment.
//   - A file mixing evented and sampled profiles keeps the kind of the active
//     profile (activeProfileIndex, else the first); profiles of the other kind
//     are still checked but skipped, with a warning, so exact and sampled
//     values never mix.
//   - DurationNanos is the union of the profiles' [startValue, endValue]
//     spans; if a profile's span is empty or inverted, the span of its events
//     (evented) or the sum of its weights (sampled) is used.
//
// Write produces one sampled profile per thread/profile label, with weights
// in nanoseconds; see Write.
package speedscope
