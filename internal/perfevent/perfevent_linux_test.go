//go:build linux

package perfevent

import (
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the calling thread's CPU time.
func threadCPU(t *testing.T) time.Duration {
	u, s := threadTimes(t)
	return u + s
}

// threadTimes is the calling thread's user and system CPU time.
func threadTimes(t *testing.T) (user, sys time.Duration) {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

//go:noinline
func spinLeaf(x uint64) uint64 {
	// No locals, no calls: the compiler gives it no frame.
	for i := 0; i < 64; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func spinCaller(d time.Duration, t *testing.T) uint64 {
	var x uint64
	start := threadCPU(t)
	for threadCPU(t)-start < d {
		for range 2000 {
			x = spinLeaf(x)
		}
	}
	return x
}

var sink uint64

func funcAt(pc uint64) string {
	if f := runtime.FuncForPC(uintptr(pc)); f != nil {
		return f.Name()
	}
	return ""
}

// openSelf opens an event on the calling (locked) thread, skipping the test
// only where the system refuses perf events, which the error must say.
func openSelf(t *testing.T, c Config) *Event {
	t.Helper()
	e, err := Open(c)
	if errors.Is(err, ErrUnavailable) {
		lvl, _ := Paranoid()
		if lvl <= 2 && os.Getenv("HOTBUDGET_PERF_REQUIRED") != "" {
			t.Fatalf("perf events refused at paranoid %d: %v", lvl, err)
		}
		t.Skipf("this system refuses perf events: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestSampleSelf samples this thread at 10 kHz while it spins: the samples
// are this thread's, the CPU time they stand for is the thread's CPU time
// measured by getrusage, and their stacks are the spinning code's.
func TestSampleSelf(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e := openSelf(t, Config{CPU: -1, Period: 200 * time.Microsecond, Disabled: true, LeafRet: true})
	user0, sys0 := threadTimes(t)
	if err := e.Enable(); err != nil {
		t.Fatal(err)
	}
	sink += spinCaller(300*time.Millisecond, t)
	if err := e.Disable(); err != nil {
		t.Fatal(err)
	}
	user1, sys1 := threadTimes(t)
	cpu, sys := user1-user0, sys1-sys0
	ss, err := e.Samples()
	if err != nil {
		t.Fatal(err)
	}
	tid := uint32(unix.Gettid())
	var sampled time.Duration
	var inLeaf, leafFixed, leafChain1, inTest int
	var last uint64
	for _, s := range ss {
		if s.Tid != tid || s.Pid != uint32(os.Getpid()) {
			t.Fatalf("sample of pid %d tid %d, want %d/%d", s.Pid, s.Tid, os.Getpid(), tid)
		}
		if s.Time < last {
			t.Fatalf("time goes back: %d after %d", s.Time, last)
		}
		last = s.Time
		sampled += time.Duration(s.Period)
		if len(s.Callchain) == 0 {
			t.Fatal("sample without a callchain")
		}
		for _, pc := range s.Callchain[1:] {
			if funcAt(pc-1) == "github.com/hotbudget/hotbudget/internal/perfevent.TestSampleSelf" {
				inTest++
				break
			}
		}
		if strings.HasSuffix(funcAt(s.Callchain[0]), ".spinLeaf") {
			inLeaf++
			if strings.HasSuffix(funcAt(s.LeafRet-1), ".spinCaller") {
				leafFixed++
			}
			if len(s.Callchain) > 1 && strings.HasSuffix(funcAt(s.Callchain[1]-1), ".spinCaller") {
				leafChain1++
			}
		}
	}
	t.Logf("%d samples, %v sampled of %v user CPU (%v system); %d lost; %d in spinLeaf (LeafRet there is spinCaller in %d, the frame-pointer chain has spinCaller in %d); %d reach the test", len(ss), sampled, cpu, sys, e.Lost(), inLeaf, leafFixed, leafChain1, inTest)
	if e.Lost() != 0 {
		t.Errorf("%d samples lost with a ring buffer of %d pages", e.Lost(), DefaultPages)
	}
	// cpu-clock samples every 200µs of the thread's CPU time, dropping
	// the samples that fall in the kernel: the samples stand for its user
	// CPU time. The kernel splits a thread's time into user and system by
	// the ticks that found it in each (75 in 300ms at 250 Hz), and its
	// timer-driven samples drift from the thread's clock when the thread
	// is preempted: beside two busy loops the samples stood for 335.6ms
	// of a thread that used 298.8ms in user space and 1.5ms in the kernel
	// (+12%, failing a bound of 10% once in ten suites). In the other
	// direction, the samples' own cost is kernel time: about 60µs a sample
	// in these guests, more on a busy host, so that quiet, just after two
	// busy loops stopped, 841 samples stood for 168.2ms of a thread that
	// used 209.6ms in user space and 90.5ms in the kernel (56% of the
	// whole, 80% of the user time). What the bound must catch is a period
	// read in the wrong unit (a factor of 1000); samples lost are counted
	// (Lost, above). So: at least half the user time, at most one and a
	// half times the whole.
	if whole := cpu + sys; sampled < cpu/2 || sampled > whole*3/2 {
		t.Errorf("samples stand for %v, the thread used %v (%v in user space): want from half its user time to 1.5 times the whole", sampled, whole, cpu)
	}
	if inTest < len(ss)*9/10 {
		t.Errorf("%d of %d callchains reach the test function, want 90%%", inTest, len(ss))
	}
	if inLeaf < len(ss)/2 {
		t.Fatalf("%d of %d samples in spinLeaf, want half at least", inLeaf, len(ss))
	}
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" {
		if leafFixed < inLeaf*9/10 {
			t.Errorf("LeafRet is spinLeaf's caller in %d of %d samples, want 90%%", leafFixed, inLeaf)
		}
	}
}

// TestSampleWraps reads a one-page ring buffer while the thread spins, so
// that records wrap around its end many times: every record still parses
// as a sample of this thread, and samples the kernel could not write for
// want of room are counted as lost.
func TestSampleWraps(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e := openSelf(t, Config{CPU: -1, Period: 50 * time.Microsecond, Pages: 1, LeafRet: true})
	tid := uint32(unix.Gettid())
	var n int
	start := time.Now()
	for time.Since(start) < 200*time.Millisecond {
		sink += spinCaller(time.Millisecond, t)
		err := e.Read(func(s *Sample) {
			n++
			if s.Tid != tid || len(s.Callchain) == 0 {
				t.Fatalf("sample %d: tid %d with %d frames", n, s.Tid, len(s.Callchain))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	head := atomic64(&e.ring.meta.Data_head)
	t.Logf("%d samples, %d lost, %d bytes through a %d-byte ring", n, e.Lost(), head, len(e.ring.data))
	if head < 4*uint64(len(e.ring.data)) {
		t.Fatalf("only %d bytes went through a %d-byte ring: no wrap tested", head, len(e.ring.data))
	}
	// A last read after a long spin without reading: the ring fills and
	// the kernel reports lost samples.
	sink += spinCaller(20*time.Millisecond, t)
	if err := e.Read(func(*Sample) {}); err != nil {
		t.Fatal(err)
	}
	if e.Lost() == 0 {
		t.Errorf("20ms at 20 kHz through a one-page ring without reading lost nothing")
	}
}

func atomic64(p *uint64) uint64 { return atomic.LoadUint64(p) }

// TestRingRecords writes records by hand into a ring, one across its end,
// and reads them back: the wrapped record is whole, the lost count summed,
// the tail moved to the head.
func TestRingRecords(t *testing.T) {
	var meta unix.PerfEventMmapPage
	r := ring{meta: &meta, data: make([]byte, 64)}
	put := func(at uint64, rec []byte) {
		for i, b := range rec {
			r.data[(at+uint64(i))%64] = b
		}
	}
	record := func(typ uint32, body ...uint64) []byte {
		b := make([]byte, 8+8*len(body))
		binary.NativeEndian.PutUint32(b, typ)
		binary.NativeEndian.PutUint16(b[6:], uint16(len(b)))
		for i, v := range body {
			binary.NativeEndian.PutUint64(b[8+8*i:], v)
		}
		return b
	}
	// The tail starts at 40 (after earlier reads); a 32-byte sample at
	// 40..72 wraps at 64, a 24-byte LOST record follows at 72..96.
	meta.Data_tail = 40 + 64
	put(40, record(unix.PERF_RECORD_SAMPLE, 1, 2, 3))
	put(72, record(unix.PERF_RECORD_LOST, 9, 7))
	meta.Data_head = 40 + 64 + 32 + 24
	var got [][]uint64
	r.read(func(typ uint32, rec []byte) {
		var v []uint64
		v = append(v, uint64(typ))
		for i := 8; i+8 <= len(rec); i += 8 {
			v = append(v, binary.NativeEndian.Uint64(rec[i:]))
		}
		got = append(got, v)
	})
	if len(got) != 2 || len(got[0]) != 4 || got[0][1] != 1 || got[0][2] != 2 || got[0][3] != 3 || got[1][0] != unix.PERF_RECORD_LOST {
		t.Fatalf("records = %v", got)
	}
	if r.lost != 7 {
		t.Errorf("lost = %d, want 7", r.lost)
	}
	if meta.Data_tail != meta.Data_head {
		t.Errorf("tail = %d, want the head %d", meta.Data_tail, meta.Data_head)
	}
	// A record whose size runs past the head is left for the next read.
	put(meta.Data_tail, record(unix.PERF_RECORD_SAMPLE, 1))
	meta.Data_head += 8
	n := 0
	r.read(func(uint32, []byte) { n++ })
	if n != 0 || meta.Data_tail != meta.Data_head-8 {
		t.Errorf("a torn record was read (%d) or the tail moved past it", n)
	}
}

// TestParse decodes a sample record as the kernel lays it out for
// sampleType with LeafRet: markers dropped from the callchain.
func TestParse(t *testing.T) {
	e := &Event{cfg: Config{LeafRet: true}}
	body := []uint64{0x401000, uint64(77)<<32 | 55, 123456, 100000, 4,
		^uint64(-unix.PERF_CONTEXT_USER - 1), 0x401000, 0x402000, 0x403000}
	if leafRegs != 0 {
		body = append(body, 2 /* abi */, 0x7ff0)
		if leafStack {
			body = append(body, 8, 0x404000, 8)
		} else {
			body[len(body)-1] = 0x404000
		}
	}
	rec := make([]byte, 8+8*len(body))
	for i, v := range body {
		binary.NativeEndian.PutUint64(rec[8+8*i:], v)
	}
	var s Sample
	if err := e.parse(rec, &s); err != nil {
		t.Fatal(err)
	}
	if s.Pid != 55 || s.Tid != 77 || s.Time != 123456 || s.Period != 100000 {
		t.Errorf("sample = %+v", s)
	}
	if len(s.Callchain) != 3 || s.Callchain[0] != 0x401000 || s.Callchain[2] != 0x403000 {
		t.Errorf("callchain = %x, want 401000 402000 403000", s.Callchain)
	}
	if leafRegs != 0 && s.LeafRet != 0x404000 {
		t.Errorf("LeafRet = %x, want 404000", s.LeafRet)
	}
	if err := e.parse(rec[:8+8*6], &s); err == nil {
		t.Error("a record cut inside its callchain parsed")
	}
}

// TestOpenErrors: bad configurations are refused before the kernel sees
// them, and a refusal says why and matches ErrUnavailable.
func TestOpenErrors(t *testing.T) {
	if _, err := Open(Config{Period: -1}); err == nil || !strings.Contains(err.Error(), "period") {
		t.Errorf("negative period: %v", err)
	}
	if _, err := Open(Config{Pages: 3}); err == nil || !strings.Contains(err.Error(), "power of two") {
		t.Errorf("3 pages: %v", err)
	}
	lvl, perr := Paranoid()
	if perr != nil {
		t.Fatal(perr)
	}
	err := openError(unix.EACCES, Config{CPU: -1})
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, unix.EACCES) {
		t.Errorf("EACCES: %v does not match ErrUnavailable and EACCES", err)
	}
	if !strings.Contains(err.Error(), "perf_event_paranoid = ") {
		t.Errorf("EACCES: %q does not name the paranoid level", err)
	}
	if lvl > 2 && !strings.Contains(err.Error(), "sysctl kernel.perf_event_paranoid=2") {
		t.Errorf("EACCES at paranoid %d: %q does not say how to allow it", lvl, err)
	}
	if err := openError(unix.ENOENT, Config{}); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("ENOENT: %v", err)
	}
	if err := openError(unix.EINVAL, Config{}); errors.Is(err, ErrUnavailable) {
		t.Errorf("EINVAL is a bug, not unavailability: %v", err)
	}
	if _, err := Open(Config{Pid: 1 << 30, CPU: -1}); err == nil || errors.Is(err, ErrUnavailable) && lvl <= 2 {
		t.Errorf("a missing pid: %v", err)
	}
}
