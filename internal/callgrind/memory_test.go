package callgrind

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// threadEvents is the shape of a table per thread and event: nev events,
// nfn functions named by cfn= lines, and nthreads threads with one cost
// line each (a reader keeping a row per function, event and thread takes
// nthreads*nfn*nev values).
func threadEvents(nev, nfn, nthreads int) []byte {
	var b bytes.Buffer
	b.WriteString("# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\nevents:")
	for i := range nev {
		fmt.Fprintf(&b, " E%d", i)
	}
	b.WriteString("\nfn=(1) main\n")
	for i := range nfn {
		fmt.Fprintf(&b, "cfn=(%d) g%d\n", i+2, i)
	}
	for t := range nthreads {
		fmt.Fprintf(&b, "thread: %d\nfn=(1)\n1 1\n", t+1)
	}
	return b.Bytes()
}

// threadSlots is the shape of many threads that each give every function
// a cost line: a row of nev costs per function and thread.
func threadSlots(nev, nfn, nthreads int) []byte {
	var b bytes.Buffer
	b.WriteString("events:")
	for i := range nev {
		fmt.Fprintf(&b, " E%d", i)
	}
	b.WriteString("\n")
	for t := range nthreads {
		fmt.Fprintf(&b, "thread: %d\n", t+1)
		for i := range nfn {
			if t == 0 {
				fmt.Fprintf(&b, "fn=(%d) f%d\n1 1\n", i+1, i)
			} else {
				fmt.Fprintf(&b, "fn=(%d)\n1 1\n", i+1)
			}
		}
	}
	return b.Bytes()
}

// fanIn is the shape of k functions called by main that each call the
// head of a chain of l functions, with consistent costs: every path of
// the chain is a stack of its own for each of the k callers, k*l frames.
func fanIn(k, l int) []byte {
	var b bytes.Buffer
	b.WriteString("events: Ir\nfn=(1) main\n0 1\n")
	for j := range k {
		fmt.Fprintf(&b, "cfn=(%d) h%d\ncalls=1 0\n0 %d\n", j+10, j, l+1)
	}
	for j := range k {
		fmt.Fprintf(&b, "fn=(%d)\n0 1\ncfn=(2) c0\ncalls=1 0\n0 %d\n", j+10, l)
	}
	for i := range l {
		if i == 0 {
			b.WriteString("fn=(2)")
		} else {
			fmt.Fprintf(&b, "fn=(%d)", k+10+i)
		}
		fmt.Fprintf(&b, "\n0 %d\n", k)
		if i < l-1 {
			fmt.Fprintf(&b, "cfn=(%d) c%d\ncalls=%d 0\n0 %d\n", k+10+i+1, i+1, k, k*(l-1-i))
		}
	}
	return b.Bytes()
}

// deepEvents is the shape of a chain of d functions whose every cost line
// has nev costs: d stacks up to d deep, built again for every event.
func deepEvents(nev, d int) []byte {
	var b bytes.Buffer
	b.WriteString("events:")
	for i := range nev {
		fmt.Fprintf(&b, " E%d", i)
	}
	ones := strings.Repeat(" 1", nev)
	b.WriteString("\n")
	for i := range d {
		fmt.Fprintf(&b, "fn=(%d) c%d\n0%s\n", i+1, i, ones)
		if i < d-1 {
			fmt.Fprintf(&b, "cfn=(%d) c%d\ncalls=1 0\n0", i+2, i+1)
			for range nev {
				fmt.Fprintf(&b, " %d", d-1-i)
			}
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

// usage is what a call allocated in all and the most its heap's objects
// took at once (sampled every millisecond), and how long it took.
type usage struct {
	total, peak uint64
	took        time.Duration
}

func (u usage) String() string {
	return fmt.Sprintf("allocated %.1f MiB, peak heap %.1f MiB, %v", float64(u.total)/(1<<20), float64(u.peak)/(1<<20), u.took.Round(time.Millisecond))
}

func measure(f func()) usage {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > base && v-base > peak {
				peak = v - base
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	start := time.Now()
	f()
	took := time.Since(start)
	close(stop)
	wg.Wait()
	runtime.ReadMemStats(&after)
	return usage{total: after.TotalAlloc - before.TotalAlloc, peak: peak, took: took}
}

// meteredReader feeds its meter the input read, as the loaders do.
type meteredReader struct {
	r io.Reader
	m *membudget.Meter
}

func (r *meteredReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	if merr := r.m.Read(n); merr != nil {
		return n, merr
	}
	return n, err
}

type shape struct {
	name string
	data []byte
}

func smallShapes() []shape {
	return []shape{
		{"thread x event tables", threadEvents(1000, 1000, 20)},
		{"a row per thread, function and event", threadSlots(1000, 200, 20)},
		{"fan-in chains", fanIn(1000, 1000)},
		{"deep stacks for many events", deepEvents(100, 400)},
	}
}

// TestMemoryBounded parses the worst shapes found for the reader's memory
// with a budget of 8 MiB and measures what it allocates: it stays within
// the budget (twice it, the spare room the charges count, and the input)
// whether the file is read or refused.
func TestMemoryBounded(t *testing.T) {
	const budget = 8 << 20
	for _, s := range smallShapes() {
		t.Run(s.name, func(t *testing.T) {
			var err error
			u := measure(func() {
				_, err = Parse(bytes.NewReader(s.data), pbuild.Options{Meter: &membudget.Meter{Max: budget}})
			})
			t.Logf("%d bytes: %v; error: %v", len(s.data), u, err)
			if err != nil && !errors.Is(err, membudget.ErrTooLarge) {
				t.Fatalf("refused for another reason than its size: %v", err)
			}
			if err != nil && !strings.Contains(err.Error(), "budget of 8 MiB") {
				t.Errorf("the error does not name the budget: %v", err)
			}
			if limit := uint64(2*budget + 2*len(s.data) + 1<<20); u.total > limit {
				t.Errorf("allocated %d bytes, more than %d (twice the budget of %d and the input)", u.total, limit, budget)
			}
		})
	}
}

// TestMemoryBoundedLong parses the worst shapes at the sizes they were
// found at (and larger) with no meter, with a 64 MiB budget and with a
// budget far above 1 GiB (HOTBUDGET_MAX_BYTES unset to its largest): each
// is read or refused within 1 GiB and 20 s, and within twice the 64 MiB
// budget when it is set. Set HOTBUDGET_LONG=1 to run it (about a minute).
func TestMemoryBoundedLong(t *testing.T) {
	if os.Getenv("HOTBUDGET_LONG") != "1" {
		t.Skip("set HOTBUDGET_LONG=1 to parse the worst shapes at full size (about a minute)")
	}
	shapes := []shape{
		{"thread x event tables, 10,000 events, names and 100 threads", threadEvents(10000, 10000, 100)},
		{"fan-in chains, 10,000 x 10,000", fanIn(10000, 10000)},
		{"fan-in chains, 300,000 x 300,000", fanIn(300000, 300000)},
		{"a row per thread, function and event, 100 x 2,000 x 500", threadSlots(100, 2000, 500)},
		{"deep stacks for many events, 1,000 x 3,000", deepEvents(1000, 3000)},
	}
	budgets := []struct {
		name  string
		meter func() *membudget.Meter
		limit uint64
	}{
		{"no meter", func() *membudget.Meter { return nil }, 1 << 30},
		{"64 MiB", func() *membudget.Meter { return membudget.ForLimit(64 << 20) }, 2 * 64 << 20},
		{"1 TiB", func() *membudget.Meter { return membudget.ForLimit(1 << 40) }, 1 << 30},
	}
	for _, s := range shapes {
		for _, bu := range budgets {
			t.Run(s.name+"/"+bu.name, func(t *testing.T) {
				var err error
				u := measure(func() {
					m := bu.meter()
					var r io.Reader = bytes.NewReader(s.data)
					if m != nil {
						r = &meteredReader{r, m}
					}
					_, err = Parse(r, pbuild.Options{Meter: m})
				})
				t.Logf("%.1f MiB: %v; error: %v", float64(len(s.data))/(1<<20), u, err)
				if err != nil && !errors.Is(err, membudget.ErrTooLarge) {
					t.Fatalf("refused for another reason than its size: %v", err)
				}
				if limit := bu.limit + uint64(2*len(s.data)); u.peak > limit {
					t.Errorf("peak heap %d bytes, more than %d", u.peak, limit)
				}
				if u.took > 20*time.Second {
					t.Errorf("took %v", u.took)
				}
			})
		}
	}
}
