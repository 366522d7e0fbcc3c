package perfassert_test

import (
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/perfassert"
)

type allocBox [4]*int // 32 bytes, with pointers: never a tiny allocation

var allocSink, besideSink []*allocBox

// allocThree allocates three 32-byte objects a call, on three lines.
//
//go:noinline
func allocThree(sink *[]*allocBox) {
	*sink = append((*sink)[:0], new(allocBox))
	*sink = append(*sink, new(allocBox))
	(*sink)[0] = new(allocBox)
}

// allocTwice calls allocThree twice and allocates one object itself.
//
//go:noinline
func allocTwice() {
	allocThree(&allocSink)
	allocThree(&allocSink)
	allocSink[0] = new(allocBox)
}

// capturedAllocs sums the captured allocations of p by leaf function.
func capturedAllocs(t *testing.T, p *profile.Profile) (work int64, objects, bytes map[string]int64) {
	t.Helper()
	ap, ok, err := perfassert.AllocProfile(p)
	if err != nil || !ok {
		t.Fatalf("AllocProfile: ok %v, err %v", ok, err)
	}
	n, ok := perfassert.Iterations(ap)
	if !ok || n <= 0 {
		t.Fatalf("allocation profile records no iterations")
	}
	if ap.Period != 1 {
		t.Errorf("allocation profile period %d, want 1 (exact)", ap.Period)
	}
	objects, bytes = map[string]int64{}, map[string]int64{}
	for _, s := range ap.Sample {
		leaf := s.Location[0].Line[0].Function.Name
		objects[leaf] += s.Value[0]
		bytes[leaf] += s.Value[1]
	}
	return n, objects, bytes
}

// TestCaptureRecordsAllocationsExactly: the counts are worked out from the
// code (3 allocations of 32 bytes in allocThree, called twice an iteration,
// one more in allocTwice), exact per iteration although a parallel
// goroutine allocates the same objects meanwhile.
func TestCaptureRecordsAllocationsExactly(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // allocates beside the capture, through allocThree too
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				allocThree(&besideSink)
			}
		}
	}()
	p := perfassert.Capture(t, allocTwice, perfassert.MaxDuration(300*time.Millisecond), perfassert.MinRuns(2))
	close(stop)
	wg.Wait()
	if p == nil {
		t.Fatal("no profile")
	}
	n, objects, bytes := capturedAllocs(t, p)
	three := "github.com/hotbudget/hotbudget/perfassert_test.allocThree"
	twice := "github.com/hotbudget/hotbudget/perfassert_test.allocTwice"
	// append may grow allocSink's array on the first iteration only.
	if got := objects[three]; got < 6*n || got > 6*n+2 {
		t.Errorf("allocThree: %d objects in %d iterations, want 6 an iteration", got, n)
	}
	if got := objects[twice]; got != n {
		t.Errorf("allocTwice: %d objects in %d iterations, want 1 an iteration", got, n)
	}
	if got := bytes[twice]; got != 32*n {
		t.Errorf("allocTwice: %d bytes in %d iterations, want 32 an iteration", got, n)
	}
	for f := range objects {
		if f != three && f != twice {
			t.Errorf("allocations of %s counted; only the captured function's were expected", f)
		}
	}
	// A second capture of the same function counts its own phase only:
	// the allocation profile is a difference of the process's.
	p2 := perfassert.Capture(t, allocTwice, perfassert.MaxDuration(200*time.Millisecond), perfassert.MinRuns(2))
	if n2, objects2, _ := capturedAllocs(t, p2); objects2[twice] != n2 || objects2[three] != 6*n2 {
		t.Errorf("second capture: allocTwice %d, allocThree %d objects in %d iterations, want 1 and 6 an iteration", objects2[twice], objects2[three], n2)
	}
	// The CPU samples are as before: no allocation sample type.
	for _, st := range p.SampleType {
		if strings.HasPrefix(st.Type, "alloc") {
			t.Errorf("captured profile has sample type %s: allocations belong in AllocProfile", st.Type)
		}
	}

	// MaxAllocs is per iteration on a captured profile; each line of
	// allocThree allocates twice an iteration.
	ft := &fakeT{}
	if !perfassert.MaxAllocs(ft, p, twice, 1) || !perfassert.MaxTotalAllocs(ft, p, twice, 7) ||
		!perfassert.MaxAllocBytes(ft, p, twice, 32) || !perfassert.MaxTotalAllocBytes(ft, p, twice, 7*32) {
		t.Errorf("limits at the exact values failed:\n%s", ft.text())
	}
	ft = &fakeT{}
	if perfassert.MaxAllocs(ft, p, three, 2) {
		t.Fatal("MaxAllocs(allocThree, 2) passed with 3 an iteration")
	}
	text := ft.text()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`allocating lines, per iteration`),
		regexp.MustCompile(`\n +2 +64B  \S+allocThree \S+allocs_test.go:22\n`),
		regexp.MustCompile(`\n +2 +64B  \S+allocThree \S+allocs_test.go:23\n`),
		regexp.MustCompile(`\n +2 +64B  \S+allocThree \S+allocs_test.go:24\n`),
		regexp.MustCompile(`allocating stacks, per iteration`),
		regexp.MustCompile(`allocThree <- \S+allocTwice`),
	} {
		if !want.MatchString(text) {
			t.Errorf("failure text lacks %s:\n%s", want, text)
		}
	}
}
