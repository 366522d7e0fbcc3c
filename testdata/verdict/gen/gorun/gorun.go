// Package gorun profiles one run of a Go workload of the verdict benchmark
// and writes the profile with hotbudget's record of the work the run did.
package gorun

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// Profile runs work under runtime/pprof at its default rate (100 Hz) and
// writes the profile to path, gzipped, with a meta.Record naming the work
// unit and the operations work reports having done, and the CPU time the
// process used meanwhile (getrusage, user+sys). With path "-" it runs work
// unprofiled and prints "ops N" (the generator profiles the process from
// outside, with perf events).
func Profile(path, name, unit string, work func() int) error {
	if path == "-" {
		_, err := fmt.Printf("ops %d\n", work())
		return err
	}
	var buf bytes.Buffer
	before := testutil.CPUTime().Nanoseconds()
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return err
	}
	ops := work()
	pprof.StopCPUProfile()
	used := testutil.CPUTime().Nanoseconds() - before
	p, err := profile.Parse(&buf)
	if err != nil {
		return fmt.Errorf("reading back the profile: %w", err)
	}
	meta.Set(p, Record(name, unit, 100, ops, used))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Record is the meta record of one run of a workload: its name, the build,
// the sampling rate, and the operations done in cpuNanos of CPU time.
func Record(name, unit string, rateHz, ops int, cpuNanos int64) meta.Record {
	return meta.Record{
		Name:     name,
		Build:    runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		RateHz:   rateHz,
		WorkUnit: meta.WorkUnit(unit),
		Runs:     []meta.Run{{Work: float64(ops), CPUNanos: cpuNanos}},
	}
}
