package testutil

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// PprofCmd is the command `go tool pprof args...`, run as the toolchain's
// pprof binary itself when `go tool -n pprof` names one: each run of the
// go command costs about 0.3s of CPU time to find the tool, which the
// tests that compare dozens of profiles with pprof paid dozens of times.
func PprofCmd(args ...string) *exec.Cmd {
	if bin := pprofBinary(); bin != "" {
		return exec.Command(bin, args...)
	}
	return exec.Command("go", append([]string{"tool", "pprof"}, args...)...)
}

var pprofBinary = sync.OnceValue(func() string {
	out, err := exec.Command("go", "tool", "-n", "pprof").Output()
	if err != nil {
		return ""
	}
	bin := strings.TrimSpace(string(out))
	if st, err := os.Stat(bin); err != nil || st.IsDir() {
		return ""
	}
	return bin
})

// PprofTop runs `go tool pprof -top` on the profile at path, with every
// node and no symbolization, and returns flat and cum in nanoseconds per
// printed name (" (inline)" cut off): the independent source the tests
// hold self and total to. t fails if pprof does, or prints no rows for a
// profile whose total is not 0.
func PprofTop(t testing.TB, path string) map[string][2]int64 {
	t.Helper()
	return PprofTopIndex(t, path, "")
}

// PprofTopIndex is PprofTop with `-sample_index=sampleIndex` ("" for
// pprof's default): times in nanoseconds, bytes in bytes, counts as they
// are.
func PprofTopIndex(t testing.TB, path, sampleIndex string) map[string][2]int64 {
	t.Helper()
	args := []string{"-top", "-symbolize=none",
		"-nodecount=1000000", "-nodefraction=0", "-edgefraction=0", "-unit=ns"}
	if sampleIndex != "" {
		args = append(args, "-sample_index="+sampleIndex)
	}
	out, err := PprofCmd(append(args, path)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go tool pprof -top %s: %v\n%s", path, err, ee.Stderr)
		}
		t.Fatalf("go tool pprof -top %s: %v", path, err)
	}
	rows := make(map[string][2]int64)
	inTable := false
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "flat") {
			inTable = true
			continue
		}
		f := strings.Fields(line)
		if !inTable || len(f) == 0 {
			continue
		}
		if len(f) < 6 {
			t.Fatalf("unexpected pprof row %q", line)
		}
		name := strings.TrimSuffix(strings.Join(f[5:], " "), " (inline)")
		rows[name] = [2]int64{parseNS(t, f[0]), parseNS(t, f[3])}
	}
	if len(rows) == 0 && !strings.Contains(string(out), "accounting for 0, 0% of 0 total") {
		t.Fatalf("no rows parsed from pprof output:\n%s", out)
	}
	return rows
}

func parseNS(t testing.TB, s string) int64 {
	t.Helper()
	// -unit=ns leaves bytes in bytes ("2048B") and counts bare, or with
	// the "ns" it asked for.
	v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSuffix(s, "ns"), "B"), 10, 64)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return v
}
