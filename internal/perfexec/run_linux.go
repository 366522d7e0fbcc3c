//go:build linux

package perfexec

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hotbudget/hotbudget/internal/perfevent"
)

// The trampoline's end of the pipes: it reads the go-ahead on goFD and
// writes that it is waiting on readyFD (exec.Cmd.ExtraFiles start at 3).
const (
	goFD    = 3
	readyFD = 4
)

func init() {
	if os.Getenv(TrampolineEnv) != "" {
		trampoline()
	}
}

// trampoline runs in init, on the main thread, the process's leader task:
// it says it is ready, waits for the go-ahead, and execs os.Args[1] with
// the arguments os.Args[2:] (argv[0] first).
func trampoline() {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "hotbudget trampoline: "+format+"\n", args...)
		os.Exit(127)
	}
	if len(os.Args) < 3 {
		fail("want the program and its argv, got %q", os.Args[1:])
	}
	if _, err := syscall.Write(readyFD, []byte{'r'}); err != nil {
		fail("telling the parent it is ready: %v", err)
	}
	var b [1]byte
	for {
		n, err := syscall.Read(goFD, b[:])
		if err == syscall.EINTR {
			continue
		}
		if n != 1 || err != nil || b[0] != 'g' {
			os.Exit(125) // the parent gave up: nothing to run
		}
		break
	}
	syscall.CloseOnExec(goFD)
	syscall.CloseOnExec(readyFD)
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, TrampolineEnv+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(os.Args[1], os.Args[2:], env)
	fail("exec %s: %v", os.Args[1], err)
}

// Run runs cmd (its Path, Args, Dir, Env, Stdin, Stdout and Stderr; not
// started) to its end with perf events sampling every thread of it from its
// first instruction, and returns the samples. cmd's error, if it failed,
// is returned with the result. The error matches ErrUnavailable when the
// system refuses perf events; the program has not run then.
func Run(cmd *exec.Cmd, o Options) (*Result, error) {
	if o.Period == 0 {
		o.Period = DefaultPeriod
	}
	if o.Pages == 0 {
		o.Pages = 256
	}
	if o.Trampoline == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("perfexec: finding the trampoline: %w", err)
		}
		o.Trampoline = exe
	}
	path := cmd.Path
	if filepath.Base(path) == path {
		lp, err := exec.LookPath(path)
		if err != nil {
			return nil, fmt.Errorf("perfexec: %w", err)
		}
		path = lp
	}
	path, err := filepath.Abs(path)
	if err == nil {
		path, err = filepath.EvalSymlinks(path) // as /proc/PID/maps names it
	}
	if err != nil {
		return nil, fmt.Errorf("perfexec: %w", err)
	}
	res := &Result{Path: path, Period: o.Period}
	argv := cmd.Args
	if len(argv) == 0 {
		argv = []string{cmd.Path}
	}
	goR, goW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("perfexec: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		goR.Close()
		goW.Close()
		return nil, fmt.Errorf("perfexec: %w", err)
	}
	defer goW.Close()
	defer readyR.Close()
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Path = o.Trampoline
	cmd.Args = append([]string{o.Trampoline, path}, argv...)
	cmd.Env = append(env[:len(env):len(env)], TrampolineEnv+"=1")
	cmd.ExtraFiles = []*os.File{goR, readyW}
	err = cmd.Start()
	goR.Close()
	readyW.Close()
	if err != nil {
		return nil, fmt.Errorf("perfexec: starting the trampoline %s: %w", o.Trampoline, err)
	}
	abort := func(err error) (*Result, error) {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	readyR.SetReadDeadline(time.Now().Add(30 * time.Second))
	var b [1]byte
	if n, _ := readyR.Read(b[:]); n != 1 || b[0] != 'r' {
		return abort(fmt.Errorf("perfexec: %s: %w", o.Trampoline, errNoTrampoline))
	}
	pid := cmd.Process.Pid
	var events []*perfevent.Event
	defer func() {
		for _, e := range events {
			e.Close()
		}
	}()
	for cpu := range runtime.NumCPU() {
		e, err := perfevent.Open(perfevent.Config{
			Pid: pid, CPU: cpu, Period: o.Period, Pages: o.Pages,
			Inherit: true, EnableOnExec: true, Disabled: true, LeafRet: true,
		})
		if err != nil {
			return abort(fmt.Errorf("perfexec: sampling %s on CPU %d: %w", path, cpu, err))
		}
		events = append(events, e)
	}
	res.Start = time.Now()
	if _, err := goW.Write([]byte{'g'}); err != nil {
		return abort(fmt.Errorf("perfexec: letting the trampoline go: %w", err))
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	drain := func() error {
		for _, e := range events {
			err := e.Read(func(s *perfevent.Sample) {
				if int(s.Pid) != pid {
					return
				}
				c := *s
				c.Callchain = append([]uint64(nil), s.Callchain...)
				res.Samples = append(res.Samples, c)
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var runErr, readErr error
	for waiting := true; waiting; {
		select {
		case runErr = <-done:
			waiting = false
		case <-tick.C:
		}
		if res.Mapping.Start == 0 {
			res.Mapping = readMapping(pid, path)
		}
		if err := drain(); err != nil && readErr == nil {
			readErr = err
		}
	}
	res.Wall = time.Since(res.Start)
	for _, e := range events {
		res.Lost += e.Lost()
	}
	if st := cmd.ProcessState; st != nil {
		res.UserTime = st.UserTime()
	}
	if readErr != nil {
		return res, fmt.Errorf("perfexec: reading the samples of %s: %w", path, readErr)
	}
	return res, runErr
}

// readMapping finds the executable mapping of path in /proc/pid/maps; zero
// when the process has not exec'd it yet or is gone.
func readMapping(pid int, path string) Mapping {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return Mapping{}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// 00400000-0052a000 r-xp 00000000 08:01 1234 /path/to/bin
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.Contains(f[1], "x") || strings.Join(f[5:], " ") != path {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		limit, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		if errors.Join(err1, err2, err3) == nil {
			return Mapping{Start: start, Limit: limit, Offset: off, Path: path}
		}
	}
	return Mapping{}
}
