package perfassert

import (
	"bytes"
	"compress/gzip"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/loaders"
)

// cpuProfile is a small CPU profile of the module's functions.
func cpuProfile(t *testing.T) *profile.Profile {
	t.Helper()
	p, err := loaders.Read(strings.NewReader("github.com/hotbudget/hotbudget/x.run;github.com/hotbudget/hotbudget/x.parse 600\ngithub.com/hotbudget/hotbudget/x.run;github.com/hotbudget/hotbudget/x.scan 400\n"),
		loaders.WithFormat(loaders.FormatFolded))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// handAllocs is an exact allocation profile of 100 iterations in which
// x.parse allocates perIter 32-byte objects an iteration.
func handAllocs(perIter int64) *profile.Profile {
	run := &profile.Function{ID: 1, Name: "github.com/hotbudget/hotbudget/x.run", Filename: "x.go"}
	parse := &profile.Function{ID: 2, Name: "github.com/hotbudget/hotbudget/x.parse", Filename: "x.go"}
	lr := &profile.Location{ID: 1, Line: []profile.Line{{Function: run, Line: 3}}}
	lp := &profile.Location{ID: 2, Line: []profile.Line{{Function: parse, Line: 12}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"}, Period: 1,
		Function: []*profile.Function{run, parse}, Location: []*profile.Location{lr, lp},
		Sample: []*profile.Sample{{Location: []*profile.Location{lp, lr}, Value: []int64{100 * perIter, 3200 * perIter}}},
	}
	meta.Set(p, meta.Record{WorkUnit: "iteration", Runs: []meta.Run{{Work: 100}}})
	return p
}

// TestAllocationsUnderRace: allocations captured under the race detector
// (either side) are shown and never fail: its sync.Pool drops objects at
// random. The same allocations without it fail.
func TestAllocationsUnderRace(t *testing.T) {
	raced := func(perIter int64) captured {
		a := handAllocs(perIter)
		rec, _ := meta.Known(a)
		rec.Race = true
		meta.Set(a, rec)
		p := cpuProfile(t)
		if err := attachAllocs(p, a); err != nil {
			t.Fatal(err)
		}
		return capturedOf(p)
	}
	plain := func(perIter int64) captured { return capturedOf(withAllocs(t, perIter)) }
	rt := &recT{}
	if judgeAllocs(rt, "MatchBaseline", "sides", plain(2), plain(3)) || len(rt.errs) == 0 {
		t.Fatalf("one more allocation per iteration without -race passed: %q", rt.logs)
	}
	for _, c := range []struct {
		name          string
		base, current captured
		who           string
	}{
		{"current", plain(2), raced(3), "the current capture"},
		{"both", raced(2), raced(3), "the current capture"},
		{"baseline", raced(2), plain(3), "the baseline"},
	} {
		rt := &recT{}
		if !judgeAllocs(rt, "MatchBaseline", "sides", c.base, c.current) || len(rt.errs) > 0 {
			t.Errorf("%s under -race: failed: %q", c.name, rt.errs)
		}
		logs := strings.Join(rt.logs, "\n")
		if !strings.Contains(logs, "allocations not judged: "+c.who+" captured them under the race detector") || !strings.Contains(logs, "x.parse: self 2 objects, 64B -> 3 objects, 96B") {
			t.Errorf("%s under -race: logs %q", c.name, logs)
		}
	}
}

func withAllocs(t *testing.T, perIter int64) *profile.Profile {
	t.Helper()
	p := cpuProfile(t)
	if err := attachAllocs(p, handAllocs(perIter)); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMatchBaselineAllocations: MatchBaseline's exact allocation verdict,
// deterministic: equal allocations pass, one more per iteration fails
// naming the function and its line, a baseline written before captures
// recorded allocations passes with a note; the CPU samples are the same
// throughout and never regress.
func TestMatchBaselineAllocations(t *testing.T) {
	t.Setenv(UpdateEnv, "")
	dir := t.TempDir()
	old := filepath.Join(dir, "old.pb.gz")
	if err := WriteBaseline(old, cpuProfile(t)); err != nil {
		t.Fatal(err)
	}
	cur := filepath.Join(dir, "cur.pb.gz")
	if err := WriteBaseline(cur, withAllocs(t, 2)); err != nil {
		t.Fatal(err)
	}
	// The baseline file carries the allocations.
	if base, err := loaders.Load(cur); err != nil {
		t.Fatal(err)
	} else if ap, ok, err := AllocProfile(base); err != nil || !ok || ap.Sample[0].Value[0] != 200 {
		t.Fatalf("the baseline's allocations: ok %v, err %v", ok, err)
	}

	rt := &recT{}
	if !MatchBaseline(rt, cur, withAllocs(t, 2)) || len(rt.errs) > 0 || !strings.Contains(strings.Join(rt.logs, "\n"), "allocations per iteration (exact): no function allocates more") {
		t.Errorf("equal allocations: errors %q, logs %q", rt.errs, rt.logs)
	}
	rt = &recT{}
	if MatchBaseline(rt, cur, withAllocs(t, 3)) {
		t.Fatal("one more allocation per iteration passed")
	}
	text := strings.Join(rt.errs, "\n")
	for _, want := range []string{"allocations regressed", "regressed  github.com/hotbudget/hotbudget/x.parse: self 2 objects, 64B -> 3 objects, 96B (+1 object, +32B)", "x.go:12"} {
		if !strings.Contains(text, want) {
			t.Errorf("failure lacks %q:\n%s", want, text)
		}
	}
	if regexp.MustCompile(`MatchBaseline: [^\n]*\d+ functions? regressed`).MatchString(text) {
		t.Errorf("the CPU verdict failed on identical samples:\n%s", text)
	}
	rt = &recT{}
	if !MatchBaseline(rt, old, withAllocs(t, 3)) || !strings.Contains(strings.Join(rt.logs, "\n"), "no allocation verdict: the baseline holds no allocations") {
		t.Errorf("a baseline without allocations: errors %q, logs %q", rt.errs, rt.logs)
	}
}

// TestAllocProfileHostile: a baseline's allocation record is untrusted:
// bad base64, bad gzip, a decompression bomb and a profile without
// allocation types are errors, never a panic or unbounded memory.
func TestAllocProfileHostile(t *testing.T) {
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestSpeed)
	zero := make([]byte, 1<<20)
	for range maxAllocProfile>>20 + 1 {
		zw.Write(zero)
	}
	zw.Close()
	var cpu bytes.Buffer
	cpuProfile(t).Write(&cpu)
	for name, comment := range map[string]string{
		"base64": meta.WithAllocProfile(nil, nil)[0] + "%%%",
		"gzip":   meta.WithAllocProfile(nil, []byte("not gzip"))[0],
		"bomb":   meta.WithAllocProfile(nil, bomb.Bytes())[0],
		"types":  meta.WithAllocProfile(nil, cpu.Bytes())[0],
	} {
		p := cpuProfile(t)
		p.Comments = append(p.Comments, comment)
		if _, ok, err := AllocProfile(p); err == nil || ok {
			t.Errorf("%s: ok %v, err %v; want an error", name, ok, err)
		}
		rt := &recT{}
		if MaxAllocs(rt, p, "x", 1) || len(rt.errs) != 1 {
			t.Errorf("%s: MaxAllocs passed or said nothing: %q", name, rt.errs)
		}
	}
}

// FuzzAllocProfile: whatever bytes a baseline's allocation record holds,
// AllocProfile returns an error or a profile with both allocation sample
// types; it never panics.
func FuzzAllocProfile(f *testing.F) {
	var good, cpu bytes.Buffer
	handAllocs(3).Write(&good)
	f.Add(good.Bytes())
	f.Add([]byte("not gzip"))
	f.Add([]byte{0x1f, 0x8b})
	if p, err := loaders.Read(strings.NewReader("a;b 1\n"), loaders.WithFormat(loaders.FormatFolded)); err == nil {
		p.Write(&cpu)
		f.Add(cpu.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &profile.Profile{Comments: meta.WithAllocProfile(nil, data)}
		ap, ok, err := AllocProfile(p)
		if err != nil {
			if ok || ap != nil {
				t.Fatalf("error %v with ok %v and a profile", err, ok)
			}
			return
		}
		if !ok {
			t.Fatal("a record is there: want a profile or an error")
		}
		if oi, bi := allocIndexes(ap); oi < 0 || bi < 0 {
			t.Fatalf("a profile without alloc_objects and alloc_space: %v", ap.SampleType)
		}
	})
}

// pooledBuf is a pool whose miss allocates a 64KiB buffer.
var pooledBuf sync.Pool

var procsSeen []int

//go:noinline
func usePooled() {
	procsSeen = append(procsSeen, runtime.GOMAXPROCS(0))
	b, _ := pooledBuf.Get().(*[64 << 10]byte)
	if b == nil {
		b = new([64 << 10]byte)
	}
	b[0]++
	pooledBuf.Put(b)
}

// TestAllocPhaseSteadyState: the allocation phase counts what every
// iteration allocates, not what the first one after a collection does: a
// pooled buffer, its pool emptied before the phase, is not counted (the
// phase's uncounted first iteration fills the pool); the phase runs on one
// P (a pool is per P) and GOMAXPROCS is as it was after. (Not under the
// race detector, whose sync.Pool drops objects at random.)
func TestAllocPhaseSteadyState(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	procsSeen = nil
	runtime.GC()
	runtime.GC() // the pool's victim cache too
	p, err := captureAllocs(usePooled, funcName(usePooled), "steady", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var bytes int64
	for _, s := range p.Sample {
		bytes += s.Value[1]
	}
	// Under the race detector sync.Pool drops a quarter of what is put
	// back, on purpose: a pooled object is then allocated anew at random.
	if bytes >= 64<<10 && !raceEnabled {
		t.Errorf("the phase counted %d bytes: the pooled 64KiB buffer, allocated once, was counted", bytes)
	}
	for i, n := range procsSeen {
		if n != 1 {
			t.Fatalf("iteration %d of the phase ran with GOMAXPROCS %d, want 1", i, n)
		}
	}
	if len(procsSeen) < 2 {
		t.Fatalf("%d iterations ran", len(procsSeen))
	}
	if after := runtime.GOMAXPROCS(0); after != before {
		t.Errorf("GOMAXPROCS %d after the phase, %d before", after, before)
	}
	// A value the program set, not the default, is kept too.
	t.Cleanup(runtime.SetDefaultGOMAXPROCS)
	runtime.GOMAXPROCS(before + 1)
	if _, err := captureAllocs(usePooled, funcName(usePooled), "steady", time.Second); err != nil {
		t.Fatal(err)
	}
	if after := runtime.GOMAXPROCS(0); after != before+1 {
		t.Errorf("GOMAXPROCS %d after the phase, set to %d before", after, before+1)
	}
}

// deepSink keeps deepAlloc's objects.
var deepSink *allocDeepBox

type allocDeepBox [6]*int // 48 bytes, with pointers

// deepAlloc allocates one 48-byte object at depth n, through n frames of
// its own.
//
//go:noinline
func deepAlloc(n int) {
	if n == 0 {
		deepSink = new(allocDeepBox)
		return
	}
	deepAlloc(n - 1)
}

func deep60() { deepAlloc(60) }

// TestAllocPhaseDeepStacks: the allocation phase counts an allocation 60
// frames below the function exactly, each frame on its stack
// (runtime.MemProfile's records keep 32), at the line that allocates, with
// the runtime's own frames (runtime.mallocgc) left out as runtime/pprof
// leaves them out; a second phase counts its own allocations only.
func TestAllocPhaseDeepStacks(t *testing.T) {
	for round := range 2 {
		p, err := captureAllocs(deep60, funcName(deep60), "deep", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var work int64
		if rec, ok, err := meta.Get(p); err == nil && ok && len(rec.Runs) == 1 {
			work = int64(rec.Runs[0].Work)
		}
		if work < 1 {
			t.Fatalf("round %d: %d iterations recorded", round, work)
		}
		if len(p.Sample) != 1 {
			t.Fatalf("round %d: %d allocating stacks, want 1:\n%v", round, len(p.Sample), p)
		}
		s := p.Sample[0]
		if s.Value[0] != work || s.Value[1] != 48*work {
			t.Errorf("round %d: %d objects, %d bytes in %d iterations; want 1 object of 48 bytes an iteration", round, s.Value[0], s.Value[1], work)
		}
		// deepAlloc 61 times, then deep60.
		if len(s.Location) != 62 {
			t.Errorf("round %d: a stack of %d frames, want 62 (deepAlloc 61 times and deep60)", round, len(s.Location))
		}
		leaf := s.Location[0].Line[0]
		if leaf.Function.Name != funcName(deepAlloc) || leaf.Line == 0 {
			t.Errorf("round %d: leaf %s:%d, want deepAlloc's allocating line", round, leaf.Function.Name, leaf.Line)
		}
		if last := s.Location[len(s.Location)-1].Line; len(last) == 0 || last[len(last)-1].Function.Name != funcName(deep60) {
			t.Errorf("round %d: the stack ends in %v, want deep60", round, last)
		}
	}
}
