// Package chrometrace reads Chrome trace-event JSON (chrome://tracing,
// DevTools Performance recordings, Node's --trace-events, Perfetto's JSON
// export) into a profile.
//
// # Input
//
// A bare array of events or an object whose traceEvents key holds them
// (other keys are skipped without being kept), optionally after a UTF-8
// byte order mark. An array that is not closed (the file ends after an
// event, a trailing comma or white space) is read with a warning; a file
// that ends inside an event is an error naming the event index and offset.
// The input is streamed: events are read one at a time by a hand-written
// scanner, integer arrays number by number, and only what a profile needs
// is kept. ts and dur are µs, may be fractional or strings; pid, tid and
// id may be numbers or strings and are keyed by their text.
//
// # Two views
//
// A trace can hold CPU samples and duration events at once; they describe
// the same time, so they are never mixed. pbuild.Options.View picks one:
//
//   - ViewSamples: V8 CPU profiles streamed as Profile and ProfileChunk
//     events (ph "P"), assembled per (pid, profile id) across chunks: nodes,
//     samples and timeDeltas continue from chunk to chunk, chunks may
//     arrive before their Profile event, a chunk may lack args.data. The
//     sampled thread is the Profile event's tid (real traces put chunks on
//     another tid). The old single CpuProfile event holds a whole profile.
//     Top-level samples/stackFrames (Hermes) are read too. Samples are
//     turned into time by v8.Build, so a profile streamed as chunks gives
//     exactly what the same data as a .cpuprofile gives. Nodes whose parent
//     is in no chunk are attached to the root with a warning. Samples are
//     kept in 8 bytes each (int32 node id and time while they fit); a
//     profile of more than a million samples is summed per node before
//     v8.Build sees it, which differs from the .cpuprofile path only in
//     rounding its last sample's duration (the average interval) to a µs.
//     Once a trace has shown CPU samples and the samples view is wanted,
//     duration events are counted but no longer kept.
//   - ViewDurations: X and B/E events nested per (pid, tid) into stacks;
//     values are exact (pbuild.Exact): each stack's exclusive time, and the
//     number of events that ended with it.
//
// The default ("") is samples when the trace has any, else durations.
// When the view asked for has no data and the other has, Parse falls back
// with a warning; a trace with neither is an error.
//
// # Duration events
//
// X is a B at ts and an E at ts+dur. Events are sorted by ts (stable), and
// at one timestamp: X events that ended earlier close; E events close the
// top frame when the names match (or the E has none), X events ending now
// close; an E naming a B open deeper in the stack closes it and the frames
// above it; B and X events begin, the longest first (a B counts as longer
// than any X); then zero-length events close. Repairs, each with a
// warning: an E that matches no open B is ignored; a B left open is closed
// at the thread's last timestamp; a child that lasts past its parent is
// clipped at the parent's end; an X with a negative or missing dur is
// dropped. Self time is never negative. Stacks deeper than MaxDepth are an
// error.
//
// Instant, counter, async, flow, object, sample and mark events are read
// and add no time; M events process_name and thread_name name processes
// and threads. Every sample carries pid, tid, process and thread labels
// (and profile, the profile id, for streamed CPU profiles).
package chrometrace
