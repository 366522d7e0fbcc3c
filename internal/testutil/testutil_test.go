package testutil

import (
	"testing"
	"time"
)

var sink []byte

func TestPeakHeap(t *testing.T) {
	stop := PeakHeap()
	sink = make([]byte, 64<<20)
	for i := range sink {
		sink[i] = byte(i)
	}
	time.Sleep(50 * time.Millisecond) // several samples with it held
	mb := stop()
	sink = nil
	if mb < 32 {
		t.Errorf("peak %.1f MB above the start with 64 MB held, want at least 32", mb)
	}
}

func TestCPUTime(t *testing.T) {
	start := CPUTime()
	x := 0
	for i := range 200_000_000 {
		x += i % 7
	}
	end := CPUTime()
	if start == 0 && end == 0 {
		t.Skip("this system does not report process CPU time")
	}
	if end <= start || x == 0 {
		t.Errorf("CPU time did not grow over a busy loop: %v then %v", start, end)
	}
}
