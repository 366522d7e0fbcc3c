package valgrind

import "testing"

// TestNative runs every request natively, where each does nothing: the
// suite runs natively, and only TestCallgrindChild under valgrind.
func TestNative(t *testing.T) {
	if n := RunningOnValgrind(); n != 0 {
		t.Fatalf("RunningOnValgrind() = %d natively, want 0", n)
	}
	StartInstrumentation()
	ZeroStats()
	ToggleCollect()
	ToggleCollect()
	DumpStats()
	DumpStatsAt("")
	DumpStatsAt("native\x00with a NUL")
	StopInstrumentation()
	for _, def := range []uintptr{0, 1, 42, ^uintptr(0)} {
		for _, code := range []uintptr{runningOnValgrind, dumpStats, startInstrumentation, 0, 0xdeadbeef} {
			block := [6]uintptr{code, 1, 2, 3, 4, 5}
			if got := request(&block, def); got != def {
				t.Errorf("request(%#x) natively = %#x, want the default %#x", code, got, def)
			}
			if block != [6]uintptr{code, 1, 2, 3, 4, 5} {
				t.Errorf("request(%#x) changed its block to %v", code, block)
			}
		}
	}
}

// TestCodes checks the request codes against the values of valgrind.h and
// callgrind.h (valgrind 3.19), written out.
func TestCodes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"RUNNING_ON_VALGRIND", runningOnValgrind, 0x1001},
		{"DUMP_STATS", dumpStats, 0x43540000},
		{"ZERO_STATS", zeroStats, 0x43540001},
		{"TOGGLE_COLLECT", toggleCollect, 0x43540002},
		{"DUMP_STATS_AT", dumpStatsAt, 0x43540003},
		{"START_INSTRUMENTATION", startInstrumentation, 0x43540004},
		{"STOP_INSTRUMENTATION", stopInstrumentation, 0x43540005},
	} {
		if c.got != c.want {
			t.Errorf("VG_USERREQ__%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

// BenchmarkRunningOnValgrind measures a request natively: the call and
// the preamble's five instructions, a few nanoseconds.
func BenchmarkRunningOnValgrind(b *testing.B) {
	n := 0
	for b.Loop() {
		n += RunningOnValgrind()
	}
	if n != 0 {
		b.Fatal("running on valgrind")
	}
}

// BenchmarkStartStop measures a pair of requests around measured code, as
// the exact-cost instrument issues them, natively.
func BenchmarkStartStop(b *testing.B) {
	for b.Loop() {
		StartInstrumentation()
		StopInstrumentation()
	}
}
