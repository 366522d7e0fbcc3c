package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/testutil"
)

// pathWith sets PATH to a new directory holding links to the named
// programs only, and a fake valgrind when fakeValgrind: record then finds
// valgrind, or does not, whatever the machine has installed.
func pathWith(t *testing.T, fakeValgrind bool, programs ...string) {
	t.Helper()
	dir := t.TempDir()
	for _, p := range programs {
		path, err := exec.LookPath(p)
		if err != nil {
			t.Skipf("%s is not installed", p)
		}
		if err := os.Symlink(path, filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	if fakeValgrind {
		script := "#!/bin/sh\necho valgrind-3.99.0\n"
		if err := os.WriteFile(filepath.Join(dir, "valgrind"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
}

// TestRecordInstrumentChoice: record counts instructions by default where
// valgrind runs and times elsewhere, saying why; a flag only time uses
// chooses time; --instrument and its shorthands choose, and two different
// choices, or time's flags with counting, are usage errors.
func TestRecordInstrumentChoice(t *testing.T) {
	choose := func(args ...string) (*recordCmd, error) {
		t.Helper()
		rc := (&cli{}).recordFlags()
		pos, err := parseArgs(rc.fs.FlagSet, append(args, "main", "HEAD"))
		if err == nil {
			err = rc.finish(pos)
		}
		return rc, err
	}
	counts := runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64")

	t.Run("no valgrind", func(t *testing.T) {
		pathWith(t, false)
		rc, err := choose()
		want := "timing: valgrind is not installed (sudo apt-get install valgrind); counts would be exact"
		if !counts {
			want = "timing: counting instructions needs valgrind on linux/amd64 or linux/arm64"
		}
		if err != nil || rc.o.Instrument != "time" || rc.o.Instructions || !strings.HasPrefix(rc.o.Why, want) {
			t.Errorf("no valgrind: %v, %q (%q), want time saying %q", err, rc.o.Instrument, rc.o.Why, want)
		}
		// Chosen, counting is still refused later, at the run, by
		// valgrind.Find; the choice itself is the user's.
		if rc, err := choose("--instructions"); err != nil || !rc.o.Instructions {
			t.Errorf("--instructions without valgrind: %v, %q", err, rc.o.Instrument)
		}
	})

	pathWith(t, true)
	for _, c := range []struct {
		args       []string
		instrument string
		why        string // a regexp; "" for an error
		err        string
	}{
		{nil, map[bool]string{true: "instructions", false: "time"}[counts], map[bool]string{
			true:  `^counting instructions \(callgrind, valgrind-[0-9.]+\): exact, the default where valgrind runs \(--instrument cycles for cache effects, time for I/O`,
			false: `^timing: counting instructions needs valgrind`}[counts], ""},
		{[]string{"--instrument", "time"}, "time", `^timing: chosen by --instrument time$`, ""},
		{[]string{"--time"}, "time", `^timing: chosen by --time$`, ""},
		{[]string{"--instrument", "instructions"}, "instructions", `^counting instructions \(callgrind\): chosen by --instrument instructions$`, ""},
		{[]string{"--instructions", "--instrument", "instructions"}, "instructions", `chosen by --instructions$`, ""},
		{[]string{"--instructions=false"}, map[bool]string{true: "instructions", false: "time"}[counts], `the default`, ""},
		{[]string{"--runs", "3"}, "time", `^timing: --runs is time's \(counting instructions, exact, is the default where valgrind runs\)$`, ""},
		{[]string{"--html", "x.html", "--count", "2"}, "time", `^timing: --count, --html is time's`, ""},
		{[]string{"--instrument", "instructions", "--runs", "3"}, "", "", "--runs is time's: --instrument instructions counts each benchmark"},
		{[]string{"--instructions", "--history-max-age", "1h"}, "", "", "--history-max-age is time's"},
		{[]string{"--time", "--instructions"}, "", "", "--time and --instructions choose two instruments: give one"},
		{[]string{"--instrument", "cycles"}, "cycles", `^estimating cycles \(callgrind's cache simulation, a fixed CI runner's caches\): chosen by --instrument cycles$`, ""},
		{[]string{"--cycles", "--instructions"}, "", "", "--cycles and --instructions choose two instruments: give one"},
		{[]string{"--instrument", "branches"}, "", "", "must be one of instructions, cycles, time"},
	} {
		rc, err := choose(c.args...)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error saying %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || rc.o.Instrument != c.instrument || rc.o.Instructions != (c.instrument == "instructions" || c.instrument == "cycles") || !regexp.MustCompile(c.why).MatchString(rc.o.Why) {
			t.Errorf("%q: %v, %q saying %q; want %s saying %s", c.args, err, rc.o.Instrument, rc.o.Why, c.instrument, c.why)
		}
	}
}

// TestRecordTimeWithoutValgrind records gitRepo's README commit where
// valgrind is not installed (a PATH of git and go only): record times it,
// the report's first line saying why and how to count, and judges it.
// (Whether a timed record of an unchanged commit passes is the time
// instrument's false-alarm rate, measured in docs/samplers.md, not this
// test's: beside a CI run and four callgrind processes, a burst of load
// in one run made the head 4 times slower and failed it.)
func TestRecordTimeWithoutValgrind(t *testing.T) {
	testutil.Slow(t, "builds two revisions and times a benchmark")
	repo := testutil.RecordRepo(t)
	pathWith(t, false, "git", "go")
	r := recordIn(t, repo, "--benchtime", "100ms", "--no-allocs", "HEAD~2", "HEAD~1")
	first, rest, _ := strings.Cut(r.stdout, "\n")
	// A timed failure names what regressed: a function's share of the
	// CPU time, or the program's time per op.
	verdict := map[int]string{exitOK: `^hotbudget record: pass \(exit 0\)`, exitFail: `^hotbudget record: regressed \(exit 1\): (functions' CPU time|the program's time)`}[r.code]
	if verdict == "" || first != "timing: valgrind is not installed (sudo apt-get install valgrind); counts would be exact" ||
		!regexp.MustCompile(verdict).MatchString(rest) {
		t.Errorf("exit %d, want a verdict of time, the first line saying why time:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r.code != exitOK {
		t.Logf("the unchanged commit's timed verdict failed (the time instrument's false alarm, beside other work):\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "; timing: valgrind is not installed") {
		t.Errorf("the progress does not say why time:\n%s", r.stderr)
	}
}
