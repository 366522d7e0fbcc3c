// Command gen writes the Go execution traces in testdata/gotrace:
//
//   - regions.trace: user regions and a task on two goroutines, without CPU
//     profiling. Goroutine 1 runs task "job" with region "load" (10ms of sleep
//     of its own) holding region "decode" (20ms of sleep); another goroutine
//     runs region "compute" three times, 5ms of sleep each.
//   - cpu.trace: CPU profiling on while tracing; region "spin" runs the busy
//     loop main.busy for 150ms.
//
// The sleeps are lower bounds of the regions' durations; the exact durations
// depend on the machine. Regenerate from the repository root with
//
//	go run ./testdata/gotrace/gen testdata/gotrace
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"time"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := write(filepath.Join(dir, "regions.trace"), false, regions); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := write(filepath.Join(dir, "cpu.trace"), true, cpu); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func write(path string, withCPU bool, f func()) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if withCPU {
		if err := pprof.StartCPUProfile(io.Discard); err != nil {
			return err
		}
	}
	if err := trace.Start(out); err != nil {
		return err
	}
	f()
	trace.Stop()
	if withCPU {
		pprof.StopCPUProfile()
	}
	return out.Close()
}

func regions() {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 3 {
			trace.WithRegion(context.Background(), "compute", func() { time.Sleep(5 * time.Millisecond) })
		}
	}()
	ctx, task := trace.NewTask(context.Background(), "job")
	trace.WithRegion(ctx, "load", func() {
		time.Sleep(10 * time.Millisecond)
		trace.WithRegion(ctx, "decode", func() { time.Sleep(20 * time.Millisecond) })
	})
	task.End()
	wg.Wait()
}

var sink int

func cpu() {
	trace.WithRegion(context.Background(), "spin", func() { sink += busy(150 * time.Millisecond) })
}

//go:noinline
func busy(d time.Duration) int {
	n := 0
	for start := time.Now(); time.Since(start) < d; {
		for i := range 1000 {
			n += i * i
		}
	}
	return n
}
