//go:build linux

package perfevent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sampleType is what each sample record holds, in the kernel's order: ip,
// pid/tid, time, period, callchain (then the registers and the stack word
// for LeafRet, when asked).
const sampleType = unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME |
	unix.PERF_SAMPLE_PERIOD | unix.PERF_SAMPLE_CALLCHAIN

// Event is an open cpu-clock event and its ring buffer. Its methods are not
// safe for concurrent use.
type Event struct {
	fd   int
	mem  []byte // the whole mapping: the metadata page, then the data pages
	ring ring
	cfg  Config
	buf  []uint64 // callchain scratch
}

// ring reads the records of a perf ring buffer.
type ring struct {
	meta *unix.PerfEventMmapPage
	data []byte // the data pages; len is a power of two
	lost uint64
	tmp  []byte // a record that wraps around the end of data
}

// Open opens a cpu-clock event as c says and maps its ring buffer. The
// error matches ErrUnavailable when the system does not allow perf events.
func Open(c Config) (*Event, error) {
	if c.Period == 0 {
		c.Period = DefaultPeriod
	}
	if c.Period < 0 {
		return nil, fmt.Errorf("perfevent: period %v: want a positive duration", c.Period)
	}
	if c.Pages == 0 {
		c.Pages = DefaultPages
	}
	if c.Pages < 1 || bits.OnesCount(uint(c.Pages)) != 1 {
		return nil, fmt.Errorf("perfevent: %d ring buffer pages: want a power of two", c.Pages)
	}
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Config:      unix.PERF_COUNT_SW_CPU_CLOCK,
		Sample:      uint64(c.Period.Nanoseconds()),
		Sample_type: sampleType,
		Bits: unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv | unix.PerfBitExcludeCallchainKernel |
			unix.PerfBitUseClockID | unix.PerfBitWatermark,
		Clockid: unix.CLOCK_MONOTONIC,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	pageSize := os.Getpagesize()
	// Wake a poller when half the buffer is full (nobody polls today; the
	// watermark keeps the kernel from waking on every sample).
	attr.Wakeup = uint32(c.Pages * pageSize / 2)
	if c.Disabled {
		attr.Bits |= unix.PerfBitDisabled
	}
	if c.Inherit {
		attr.Bits |= unix.PerfBitInherit
	}
	if c.EnableOnExec {
		attr.Bits |= unix.PerfBitEnableOnExec
	}
	if c.LeafRet && leafRegs != 0 {
		attr.Sample_type |= unix.PERF_SAMPLE_REGS_USER
		attr.Sample_regs_user = leafRegs
		if leafStack {
			attr.Sample_type |= unix.PERF_SAMPLE_STACK_USER
			attr.Sample_stack_user = 8
		}
	}
	fd, err := unix.PerfEventOpen(&attr, c.Pid, c.CPU, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, openError(err, c)
	}
	mem, err := unix.Mmap(fd, 0, (1+c.Pages)*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOMEM) {
			return nil, fmt.Errorf("perfevent: mapping a %d-page ring buffer: %w (kernel.perf_event_mlock_kb limits it; ask for fewer pages)", c.Pages, err)
		}
		return nil, fmt.Errorf("perfevent: mapping the ring buffer: %w", err)
	}
	e := &Event{fd: fd, mem: mem, cfg: c}
	e.ring.meta = (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))
	off, size := e.ring.meta.Data_offset, e.ring.meta.Data_size
	if off == 0 { // kernels before 4.1 leave these 0: data follows the first page
		off, size = uint64(pageSize), uint64(c.Pages*pageSize)
	}
	e.ring.data = mem[off : off+size]
	return e, nil
}

// openError explains why perf_event_open failed.
func openError(err error, c Config) error {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return fmt.Errorf("perfevent: perf_event_open: %w", err)
	}
	switch errno {
	case unix.EACCES, unix.EPERM:
		lvl, lerr := Paranoid()
		why := "refused by the kernel (" + errno.Error() + ")"
		switch {
		case lerr != nil:
			why += "; kernel.perf_event_paranoid unreadable: " + lerr.Error() + " (a seccomp filter or container may forbid perf_event_open)"
		case lvl > 2:
			why += fmt.Sprintf(" at kernel.perf_event_paranoid = %d, which forbids perf events to unprivileged processes; `sysctl kernel.perf_event_paranoid=2` allows a process to sample itself and its children", lvl)
		case c.Pid == -1 && lvl > 0:
			why += fmt.Sprintf(" at kernel.perf_event_paranoid = %d: sampling every task on a CPU needs 0 or CAP_PERFMON", lvl)
		default:
			why += fmt.Sprintf(" although kernel.perf_event_paranoid = %d allows it: a seccomp filter (containers often have one), or a security module, forbids perf_event_open", lvl)
		}
		return &unavailable{errno: errno, msg: why}
	case unix.ENOENT, unix.ENOSYS, unix.EOPNOTSUPP:
		return &unavailable{errno: errno, msg: "not supported by this kernel (" + errno.Error() + "): built without CONFIG_PERF_EVENTS, or the cpu-clock event is missing"}
	case unix.ESRCH:
		return fmt.Errorf("perfevent: perf_event_open on pid %d: no such task: %w", c.Pid, err)
	}
	return fmt.Errorf("perfevent: perf_event_open (pid %d, cpu %d): %w", c.Pid, c.CPU, err)
}

// unavailable is an error matching ErrUnavailable.
type unavailable struct {
	errno unix.Errno
	msg   string
}

func (e *unavailable) Error() string { return "perfevent: perf events " + e.msg }

// Is matches ErrUnavailable.
func (e *unavailable) Is(target error) bool { return target == ErrUnavailable }

// Unwrap returns the errno.
func (e *unavailable) Unwrap() error { return e.errno }

// Paranoid reads kernel.perf_event_paranoid: 2 lets a process sample its
// own user-space code, 3 and above (Debian's and Android's patch) forbid
// perf events to unprivileged processes.
func Paranoid() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("/proc/sys/kernel/perf_event_paranoid: %q is not a level", strings.TrimSpace(string(b)))
	}
	return n, nil
}

// FD is the event's file descriptor (for ioctls such as
// PERF_EVENT_IOC_SET_OUTPUT, which sends another event's samples here).
func (e *Event) FD() int { return e.fd }

// Enable starts sampling.
func (e *Event) Enable() error {
	return ioctl(e.fd, unix.PERF_EVENT_IOC_ENABLE, "enable")
}

// Disable stops sampling; samples already taken stay readable.
func (e *Event) Disable() error {
	return ioctl(e.fd, unix.PERF_EVENT_IOC_DISABLE, "disable")
}

// SetOutput sends e's samples to the ring buffer of to (both on the same
// CPU, or both for any CPU); e's own buffer then stays empty.
func (e *Event) SetOutput(to *Event) error {
	if err := unix.IoctlSetInt(e.fd, unix.PERF_EVENT_IOC_SET_OUTPUT, to.fd); err != nil {
		return fmt.Errorf("perfevent: redirecting samples: %w", err)
	}
	return nil
}

func ioctl(fd int, req uint, what string) error {
	if err := unix.IoctlSetInt(fd, req, 0); err != nil {
		return fmt.Errorf("perfevent: %s: %w", what, err)
	}
	return nil
}

// Close stops sampling and frees the event and its buffer.
func (e *Event) Close() error {
	if e.mem == nil {
		return nil
	}
	err1 := unix.Munmap(e.mem)
	err2 := unix.Close(e.fd)
	e.mem, e.ring.meta, e.ring.data = nil, nil, nil
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("perfevent: closing: %w", err)
	}
	return nil
}

// Lost is the number of samples the kernel dropped so far because the ring
// buffer was full (PERF_RECORD_LOST), as read by Read.
func (e *Event) Lost() uint64 { return e.ring.lost }

// Read calls fn with each sample in the ring buffer, oldest first, and
// frees their space. The Callchain fn sees is reused by the next sample:
// copy it to keep it.
func (e *Event) Read(fn func(*Sample)) error {
	if e.mem == nil {
		return errors.New("perfevent: read of a closed event")
	}
	var s Sample
	var perr error
	e.ring.read(func(typ uint32, rec []byte) {
		if typ != unix.PERF_RECORD_SAMPLE || perr != nil {
			return
		}
		if perr = e.parse(rec, &s); perr == nil {
			fn(&s)
		}
	})
	return perr
}

// Samples reads the samples in the ring buffer, as Read, into new memory.
func (e *Event) Samples() ([]Sample, error) {
	var out []Sample
	err := e.Read(func(s *Sample) {
		c := *s
		c.Callchain = append([]uint64(nil), s.Callchain...)
		out = append(out, c)
	})
	return out, err
}

// read calls fn with each record between the tail and the head, then
// moves the tail to the head. The kernel writes records before it
// publishes the head (the head is read with an atomic load, which orders
// the record reads after it) and overwrites nothing until the tail moves
// past it (the tail is stored atomically after the records were read).
func (r *ring) read(fn func(typ uint32, rec []byte)) {
	head := atomic.LoadUint64(&r.meta.Data_head)
	tail := atomic.LoadUint64(&r.meta.Data_tail)
	size := uint64(len(r.data))
	for tail+8 <= head {
		off := tail & (size - 1)
		hdr := r.bytes(off, 8)
		typ := binary.NativeEndian.Uint32(hdr[0:4])
		n := uint64(binary.NativeEndian.Uint16(hdr[6:8]))
		if n < 8 || tail+n > head {
			break // corrupt or torn: never seen, but do not loop on it
		}
		rec := r.bytes(off, n)
		if typ == unix.PERF_RECORD_LOST && len(rec) >= 24 {
			r.lost += binary.NativeEndian.Uint64(rec[16:24])
		}
		fn(typ, rec)
		tail += n
	}
	atomic.StoreUint64(&r.meta.Data_tail, tail)
}

// bytes returns n bytes of the ring from off, copied when they wrap.
func (r *ring) bytes(off, n uint64) []byte {
	size := uint64(len(r.data))
	if off+n <= size {
		return r.data[off : off+n]
	}
	r.tmp = append(r.tmp[:0], r.data[off:]...)
	r.tmp = append(r.tmp, r.data[:n-(size-off)]...)
	return r.tmp
}

// parse decodes a PERF_RECORD_SAMPLE of sampleType into s.
func (e *Event) parse(rec []byte, s *Sample) error {
	d := decoder{b: rec[8:]}
	d.u64() // ip: the callchain starts with it
	pt := d.u64()
	s.Pid, s.Tid = uint32(pt), uint32(pt>>32)
	if !isLittleEndian {
		s.Pid, s.Tid = uint32(pt>>32), uint32(pt)
	}
	s.Time = d.u64()
	s.Period = d.u64()
	nr := d.u64()
	if d.bad || nr > uint64(len(d.b)/8) {
		return fmt.Errorf("perfevent: sample record of %d bytes is truncated", len(rec))
	}
	e.buf = e.buf[:0]
	for range nr {
		pc := d.u64()
		if pc >= contextMax {
			continue // PERF_CONTEXT_USER and the like
		}
		e.buf = append(e.buf, pc)
	}
	s.Callchain = e.buf
	s.LeafRet = 0
	if e.cfg.LeafRet && leafRegs != 0 {
		if abi := d.u64(); abi != 0 {
			reg := d.u64() // the one register asked for
			if !leafStack {
				s.LeafRet = reg
			}
		}
		if leafStack {
			if n := d.u64(); n >= 8 {
				word := d.b[:min(8, len(d.b))]
				if len(word) == 8 {
					s.LeafRet = binary.NativeEndian.Uint64(word)
				}
				d.skip(int(n))
				if dyn := d.u64(); dyn < 8 {
					s.LeafRet = 0 // the kernel could not copy the word
				}
			}
		}
	}
	if d.bad {
		return fmt.Errorf("perfevent: sample record of %d bytes is truncated", len(rec))
	}
	return nil
}

// contextMax is PERF_CONTEXT_MAX (-4095): callchain entries at or above it
// are markers, not addresses.
const contextMax = ^uint64(4095 - 1)

var isLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) u64() uint64 {
	if len(d.b) < 8 {
		d.bad = true
		return 0
	}
	v := binary.NativeEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) skip(n int) {
	if n > len(d.b) {
		d.bad = true
		d.b = nil
		return
	}
	d.b = d.b[n:]
}
