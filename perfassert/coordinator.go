package perfassert

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// The coordinator: one CPU profiler per process shared by every capture
// under way (see "How captures share the CPU profiler" in session.go).

// coordinator runs the process's one profiling session.
type coordinator struct {
	mu      sync.Mutex
	cond    *sync.Cond
	alive   bool // the loop goroutine runs
	on      bool // the profiler runs for the loop
	hz      int
	buf     *bytes.Buffer
	cpu0    time.Duration // process CPU at the start of the round
	cpuOK   bool
	begin   time.Time
	active  []*session
	pending []*session // waiting for the profiler to (re)start at their rate
	wake    chan struct{}
	nextID  uint64

	joins   atomic.Int64 // captures admitted so far
	activeN atomic.Int32 // len(active)

	// roundHook, when set (tests), sees each round's whole profile.
	roundHook func(*profile.Profile)
}

var coord = newCoordinator()

func newCoordinator() *coordinator {
	c := &coordinator{wake: make(chan struct{}, 1)}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// poke makes the loop reconsider when the round ends.
func (c *coordinator) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// join adds s to the session, starting the profiler if it is idle. It
// returns once s is being profiled, or with an error wrapping
// ErrProfilerBusy when the profiler is held outside perfassert.
func (c *coordinator) join(s *session) error {
	c.mu.Lock()
	c.nextID++
	s.id = strconv.FormatUint(c.nextID, 10)
	switch {
	case !c.alive:
		if err := c.startLocked(s.cfg.hz); err != nil {
			c.mu.Unlock()
			return err
		}
		c.alive = true
		c.admitLocked(s)
		c.mu.Unlock()
		go c.loop()
		return nil
	case c.on && c.hz == s.cfg.hz:
		c.admitLocked(s)
		c.mu.Unlock()
		return nil
	}
	c.pending = append(c.pending, s)
	c.mu.Unlock()
	c.poke()
	return <-s.admitted
}

func (c *coordinator) admitLocked(s *session) {
	s.start = time.Now()
	s.deadline = s.start.Add(s.cfg.maxDuration)
	// A run long enough for MinSamples in MinRuns runs if fn keeps one CPU
	// busy, and for a few samples at least.
	perRun := max(float64(s.cfg.minSamples)/float64(s.cfg.minRuns), minRunSamples)
	s.runLen = time.Duration(perRun / s.cfg.sampleHz() * float64(time.Second))
	// Twice MinRuns runs fit in MaxDuration even when the machine gives
	// the capture little CPU: a capture of three or four long runs cannot
	// tell how runs vary (a baseline of 3 runs was seen at load 20 on 2
	// cores, and functions of a few samples a run were then called
	// regressed).
	s.runLen = min(s.runLen, s.cfg.maxDuration/time.Duration(2*max(s.cfg.minRuns, 1)))
	s.runLen = min(max(s.runLen, minRun), maxRun)
	s.target.Store(int64(s.cfg.minRuns))
	c.active = append(c.active, s)
	c.activeN.Store(int32(len(c.active)))
	c.joins.Add(1)
}

// leave removes s when its function panicked or called runtime.Goexit, and
// returns once the profiler is free if no other capture uses it.
func (c *coordinator) leave(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active = slices.DeleteFunc(c.active, func(x *session) bool { return x == s })
	c.activeN.Store(int32(len(c.active)))
	c.poke()
	for c.alive && len(c.active) == 0 && len(c.pending) == 0 {
		c.cond.Wait()
	}
}

func (c *coordinator) startLocked(hz int) error {
	buf := new(bytes.Buffer)
	if hz != defaultRate {
		// StartCPUProfile sets 100 Hz; a rate already set wins (and the
		// runtime complains on stderr). If the profiler is busy this is a
		// no-op for the running profile.
		runtime.SetCPUProfileRate(hz)
	}
	if err := pprof.StartCPUProfile(buf); err != nil {
		return fmt.Errorf("perfassert: %w: %v", ErrProfilerBusy, err)
	}
	c.on, c.hz, c.buf = true, hz, buf
	c.begin = time.Now()
	c.cpu0, c.cpuOK = processCPU()
	return nil
}

// waitRoundEnd sleeps until the round should end: after maxRound, or at
// once when a capture asks for a verdict, stopped at its time limit, left,
// or waits to be admitted.
func (c *coordinator) waitRoundEnd() {
	for {
		c.mu.Lock()
		end := c.begin.Add(maxRound)
		if len(c.active) == 0 || len(c.pending) > 0 && c.pending[0].cfg.hz == c.hz {
			end = time.Time{}
		}
		for _, s := range c.active {
			if s.paused.Load() || s.exited.Load() {
				end = time.Time{}
			}
		}
		c.mu.Unlock()
		d := time.Until(end)
		if d <= 0 {
			return
		}
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
			return
		case <-c.wake:
			timer.Stop()
		}
	}
}

// loop runs rounds until no capture is left.
func (c *coordinator) loop() {
	for {
		c.waitRoundEnd()

		c.mu.Lock()
		pprof.StopCPUProfile()
		cpu1, cpuOK := processCPU()
		used, cpuOK := cpu1-c.cpu0, cpuOK && c.cpuOK
		active := slices.Clone(c.active)
		// Which captures the samples just read are complete for: a
		// capture that paused or exited did so before the profiler
		// stopped.
		ready := make([]bool, len(active))
		for i, s := range active {
			ready[i] = s.paused.Load() || s.exited.Load()
		}
		buf, hook := c.buf, c.roundHook
		c.on, c.buf = false, nil
		c.mu.Unlock()

		p, err := profile.Parse(buf)
		var sampled time.Duration // the CPU time the round's samples stand for, to tell lost samples
		if err != nil {
			err = fmt.Errorf("perfassert: reading the captured profile: %w", err)
		} else {
			if hook != nil {
				hook(p)
			}
			var sampledOK bool
			sampled, sampledOK = splitRound(p, active)
			cpuOK = cpuOK && sampledOK
		}

		c.mu.Lock()
		var finished []*session
		var resume []*session
		for i, s := range active {
			if !slices.Contains(c.active, s) {
				continue // left: its function panicked
			}
			if err == nil && cpuOK {
				s.sampled += sampled
				s.used += used
				s.cpuOK = true
			}
			switch {
			case err != nil:
				s.err = err
			case ready[i] && s.exited.Load():
				s.reason = "time limit (MaxDuration " + textfmt.Duration(s.cfg.maxDuration) + ")"
				s.top, s.rse = s.precision(s.finishedRuns())
			case ready[i] && s.enough():
			default:
				s.plan()
				if ready[i] {
					resume = append(resume, s)
				}
				continue
			}
			c.active = slices.DeleteFunc(c.active, func(x *session) bool { return x == s })
			finished = append(finished, s)
		}
		c.activeN.Store(int32(len(c.active)))
		c.restartLocked(&finished)
		c.cond.Broadcast()
		alive := c.alive
		c.mu.Unlock()
		for _, s := range finished {
			s.stop.Store(true)
			if s.paused.Load() {
				s.paused.Store(false)
				s.verdict <- false
			}
			close(s.finished)
		}
		for _, s := range resume {
			s.paused.Store(false)
			s.verdict <- true
		}
		if !alive {
			return
		}
	}
}

// restartLocked starts the next round when a capture still needs samples,
// at the rate of the captures that continue (or of the oldest waiting one),
// and admits the waiting captures of that rate. Captures that cannot go on
// because the profiler was taken meanwhile are added to finished.
func (c *coordinator) restartLocked(finished *[]*session) {
	if len(c.active) == 0 && len(c.pending) == 0 {
		c.alive = false
		return
	}
	hz := 0
	if len(c.active) > 0 {
		hz = c.active[0].cfg.hz
	} else {
		hz = c.pending[0].cfg.hz
	}
	if err := c.startLocked(hz); err != nil {
		for _, s := range c.active {
			s.err = err
			*finished = append(*finished, s)
		}
		for _, s := range c.pending {
			s.admitted <- err
		}
		c.active, c.pending = nil, nil
		c.activeN.Store(0)
		c.alive = false
		return
	}
	var still []*session
	for _, s := range c.pending {
		if s.cfg.hz != hz {
			still = append(still, s)
			continue
		}
		c.admitLocked(s)
		s.admitted <- nil
	}
	c.pending = still
}
