// Package gotrace reads Go execution traces (runtime/trace, go test -trace)
// into profiles, through the streaming reader of golang.org/x/exp/trace.
//
// A trace gives two views, chosen with pbuild.Options.View:
//
//   - Durations (pbuild.ViewDurations): user regions (trace.StartRegion,
//     trace.WithRegion) as exact wall-clock durations per goroutine. A
//     region's stack is its enclosing regions on the same goroutine, so the
//     self time of a region is the time not covered by regions nested in it
//     and its total time is its whole wall-clock span. Each region's "frame"
//     is named by the region type. When a region belongs to a task
//     (trace.NewTask) other than its enclosing region's, a frame
//     "task:<type>" sits above it, so a task's total time is the wall time of
//     the regions run in it, summed over goroutines; a task's own begin–end
//     latency is not added (it would count its regions twice). Time counts
//     whether or not the goroutine was running: a region blocked on a channel
//     for 10ms takes 10ms. Samples carry the labels goroutine (the goroutine
//     id) and task (the innermost region's task type, if any). The profile is
//     marked exact (pbuild.Exact); the count value is 1 per region that ended
//     with that stack.
//   - Samples (pbuild.ViewSamples): the CPU profile samples a trace holds when
//     CPU profiling ran during tracing (go test -trace -cpuprofile, or
//     pprof.StartCPUProfile beside trace.Start), with real Go frames (function,
//     file, line). Each sample is worth the CPU profiling period, which a trace
//     does not record: 10ms, the runtime's default rate of 100 Hz (a warning
//     says when the gaps between a thread's samples show a higher rate). Samples
//     carry the labels tid (the OS thread), goroutine, and region and task
//     (innermost open user region of that goroutine and its task), so region
//     CPU time can be selected by label.
//
// The default view takes the CPU samples when the trace has any (they cover
// all code, not only annotated code, and mixing both views would count time
// twice), and the regions otherwise. When the chosen view is empty and the
// other one is not, the other one is used with a warning.
//
// Regions still open when the trace ends are closed at the last event with a
// warning; a region end with no begin on its goroutine (the region began
// before the trace's window, as in a flight recorder snapshot) is counted
// from the first event with a warning. Regions that do not nest on a
// goroutine make x/exp/trace refuse the trace ("misuse of region"), which
// Parse reports as an error. Regions nested deeper than MaxDepth on a
// goroutine are counted in their ancestor at that depth, with a warning.
//
// Memory: Parse keeps the open regions, the distinct stacks and label sets,
// and a bounded sample of gaps between CPU samples. x/exp/trace holds one
// generation of the trace at a time (the runtime starts a new one about every
// second), several times that generation's size in memory; traces older than
// Go 1.22 are read whole.
package gotrace

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"golang.org/x/exp/trace"

	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// Label keys this package sets besides pbuild's.
const (
	LabelGoroutine = pbuild.LabelGoID // goroutine id, as a string
	LabelTask      = "task"           // type of the task of the innermost region
	LabelRegion    = "region"         // innermost open region (samples view)
)

// TaskPrefix starts the name of the frame that stands for a task.
const TaskPrefix = "task:"

// DefaultPeriod is the CPU profiling period assumed for each CPU sample:
// the runtime's default rate of 100 Hz.
const DefaultPeriod = 10_000_000

// MaxDepth bounds the regions nested on one goroutine that get their own
// frame; deeper ones are counted in their ancestor at this depth, with a
// warning. It bounds the work per event and the size of stacks.
const MaxDepth = 512

// maxGaps bounds the gaps between CPU samples kept to check the rate.
const maxGaps = 10000

// FormatName is the format name stored in the profile comments.
const FormatName = "go-trace"

// Parse reads a Go execution trace and returns the view o.View selects.
func Parse(r io.Reader, o pbuild.Options) (p *profile.Profile, err error) {
	switch o.View {
	case "", pbuild.ViewSamples, pbuild.ViewDurations:
	default:
		return nil, fmt.Errorf("unknown view %q (want %q or %q)", o.View, pbuild.ViewSamples, pbuild.ViewDurations)
	}
	cr := &countingReader{r: r}
	ps := newParser()
	ps.regions.SetMeter(o.Meter)
	ps.cpu.SetMeter(o.Meter)
	defer func() {
		// x/exp/trace validates what it reads, but a corrupt trace must
		// never crash the caller: report any panic as an error.
		if v := recover(); v != nil {
			p = nil
			err = fmt.Errorf("event %d (byte %d): corrupt trace: reader panicked: %v", ps.events, cr.n, v)
		}
	}()
	tr, err := trace.NewReader(cr)
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			// x/exp/trace reports a short last batch as "failed to read full batch".
			if errors.Is(err, io.ErrUnexpectedEOF) || cr.eof && strings.Contains(err.Error(), "failed to read full") {
				return nil, fmt.Errorf("event %d: truncated trace (input ends at byte %d): %w", ps.events, cr.n, err)
			}
			return nil, fmt.Errorf("event %d (byte %d): %w", ps.events, cr.n, err)
		}
		ps.event(ev)
	}
	if ps.events == ps.syncs {
		return nil, errors.New("trace has a header but no events")
	}
	return ps.finish(o.View)
}

// countingReader counts the bytes read, for error positions. The reader
// buffers ahead, so the count is where reading stopped, not the exact event.
type countingReader struct {
	r   io.Reader
	n   int64
	eof bool // the input has ended
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err == io.EOF {
		c.eof = true
	}
	return n, err
}

// openRegion is a region begun and not yet ended on a goroutine.
type openRegion struct {
	typ   string
	task  string // task type, "" for the background task
	begin trace.Time
	loc   []*profile.Location // frames this region adds (task frame, region frame), root first
}

// gState is the open regions of a goroutine, outermost first.
type gState struct {
	open []openRegion
	last trace.Time // time of the last region begin or end on this goroutine
	// overflow counts the open regions nested beyond MaxDepth, which have no frames.
	overflow int
	// Labels of the durations view for goroutine labelG in task labelTask.
	labels    pbuild.Labels
	labelG    trace.GoID
	labelTask string
}

type frameKey struct {
	task, typ string
	withTask  bool // the task frame is needed: the task differs from the parent region's
}

type labelKey struct {
	g            trace.GoID
	m            trace.ThreadID
	region, task string
}

type parser struct {
	regions *pbuild.Builder // durations view
	cpu     *pbuild.Builder // samples view
	gs      map[trace.GoID]*gState
	tasks   map[trace.TaskID]string
	labels  map[labelKey]pbuild.Labels
	frames  map[frameKey][]*profile.Location
	free    []*gState // states of goroutines with no open region, for reuse

	events      int64 // events read, including sync events
	syncs       int64
	first, last trace.Time
	nRegions    int64
	nCPU        int64
	stack       []*profile.Location // scratch, leaf first
	wallStart   int64               // wall clock of the first event, ns since epoch; 0 if unknown
	orphanEnds  int64
	lastSample  map[trace.ThreadID]trace.Time // last CPU sample per thread
	gaps        []int64                       // gaps between CPU samples of a thread, at most maxGaps
}

func newParser() *parser {
	return &parser{
		regions: pbuild.New(pbuild.Exact),
		cpu:     pbuild.New(pbuild.Sampled),
		gs:      make(map[trace.GoID]*gState),
		tasks:   make(map[trace.TaskID]string),
		labels:  make(map[labelKey]pbuild.Labels),
		frames:  make(map[frameKey][]*profile.Location),

		lastSample: make(map[trace.ThreadID]trace.Time),
	}
}

func (ps *parser) event(ev trace.Event) {
	t := ev.Time()
	if ps.events == 0 {
		ps.first = t
	}
	ps.events++
	if t > ps.last {
		ps.last = t
	}
	switch ev.Kind() {
	case trace.EventSync:
		ps.syncs++
		if ps.wallStart == 0 {
			if cs := ev.Sync().ClockSnapshot; cs != nil {
				ps.wallStart = cs.Wall.UnixNano() - int64(cs.Trace-ps.first)
			}
		}
	case trace.EventTaskBegin:
		tk := ev.Task()
		ps.tasks[tk.ID] = tk.Type
	case trace.EventTaskEnd:
		delete(ps.tasks, ev.Task().ID)
	case trace.EventRegionBegin:
		ps.regionBegin(ev.Goroutine(), ev.Region(), t)
	case trace.EventRegionEnd:
		ps.regionEnd(ev.Goroutine(), ev.Region(), t)
	case trace.EventStackSample:
		ps.sample(ev)
	}
}

func (ps *parser) taskName(id trace.TaskID) string {
	if id == trace.BackgroundTask || id == trace.NoTask {
		return ""
	}
	if name, ok := ps.tasks[id]; ok && name != "" {
		return name
	}
	// The task began before tracing started, or has already ended.
	return strconv.FormatUint(uint64(id), 10)
}

// regionFrames returns the frames a region adds below its parent: a task
// frame when the task changes, then the region frame.
func (ps *parser) regionFrames(parentTask, task, typ string) []*profile.Location {
	k := frameKey{task, typ, task != "" && task != parentTask}
	if loc, ok := ps.frames[k]; ok {
		return loc
	}
	var loc []*profile.Location
	if k.withTask {
		loc = append(loc, ps.regions.Location(pbuild.Frame{Name: TaskPrefix + task}))
	}
	loc = append(loc, ps.regions.Location(pbuild.Frame{Name: typ}))
	ps.frames[k] = loc
	return loc
}

func (ps *parser) goroutine(g trace.GoID) *gState {
	s, ok := ps.gs[g]
	if !ok {
		if n := len(ps.free); n > 0 {
			s = ps.free[n-1]
			ps.free = ps.free[:n-1]
		} else {
			s = &gState{}
		}
		ps.gs[g] = s
	}
	return s
}

// flush adds the time since the last change on g to its current stack.
func (ps *parser) flush(g trace.GoID, s *gState, t trace.Time, count int64) {
	if len(s.open) == 0 {
		return
	}
	d := int64(t - s.last)
	if d < 0 {
		d = 0
	}
	ps.stack = ps.stack[:0]
	for i := len(s.open) - 1; i >= 0; i-- {
		loc := s.open[i].loc
		for j := len(loc) - 1; j >= 0; j-- {
			ps.stack = append(ps.stack, loc[j])
		}
	}
	if d > 0 || count > 0 {
		task := s.open[len(s.open)-1].task
		if s.labels == nil || s.labelG != g || s.labelTask != task {
			s.labels, s.labelG, s.labelTask = ps.label(g, trace.NoThread, "", task), g, task
		}
		ps.regions.Add(ps.stack, count, d, s.labels)
	}
}

func (ps *parser) label(g trace.GoID, m trace.ThreadID, region, task string) pbuild.Labels {
	k := labelKey{g, m, region, task}
	l, ok := ps.labels[k]
	if !ok {
		var gs, ms string
		if g != trace.NoGoroutine {
			gs = strconv.FormatInt(int64(g), 10)
		}
		if m != trace.NoThread {
			ms = strconv.FormatInt(int64(m), 10)
		}
		l = pbuild.NewLabels(LabelGoroutine, gs, pbuild.LabelTID, ms, LabelRegion, region, LabelTask, task)
		ps.labels[k] = l
	}
	return l
}

func (ps *parser) regionBegin(g trace.GoID, r trace.Region, t trace.Time) {
	s := ps.goroutine(g)
	if len(s.open) >= MaxDepth {
		// Deeper regions add no frames: their time stays with the
		// region at the limit, so stacks and memory stay bounded.
		s.overflow++
		ps.regions.Warnf("goroutine %d: regions nested deeper than %d; deeper regions counted in their ancestor at depth %d", g, MaxDepth, MaxDepth)
		return
	}
	ps.flush(g, s, t, 0)
	parentTask := ""
	if n := len(s.open); n > 0 {
		parentTask = s.open[n-1].task
	}
	task := ps.taskName(r.Task)
	s.open = append(s.open, openRegion{typ: r.Type, task: task, begin: t, loc: ps.regionFrames(parentTask, task, r.Type)})
	s.last = t
}

func (ps *parser) regionEnd(g trace.GoID, r trace.Region, t trace.Time) {
	s := ps.goroutine(g)
	if s.overflow > 0 {
		// x/exp/trace checks that regions nest on a goroutine, so this
		// ends the innermost region beyond MaxDepth.
		s.overflow--
		return
	}
	// Find the innermost open region of this type.
	i := len(s.open) - 1
	for i >= 0 && s.open[i].typ != r.Type {
		i--
	}
	if i < 0 {
		if len(s.open) > 0 {
			ps.regions.Warnf("goroutine %d: end of region %q, which is not open (open: %q); ignored", g, r.Type, s.open[len(s.open)-1].typ)
			return
		}
		// Began before the trace: count it from the first event.
		ps.orphanEnds++
		task := ps.taskName(r.Task)
		s.open = append(s.open, openRegion{typ: r.Type, task: task, begin: ps.first, loc: ps.regionFrames("", task, r.Type)})
		s.last = ps.first
		i = 0
	}
	for j := len(s.open) - 1; j > i; j-- {
		ps.regions.Warnf("goroutine %d: region %q ended inside region %q; closed both", g, s.open[i].typ, s.open[j].typ)
		ps.flush(g, s, t, 1)
		s.last = t
		s.open = s.open[:j]
		ps.nRegions++
	}
	ps.flush(g, s, t, 1)
	s.last = t
	s.open = s.open[:i]
	ps.nRegions++
	if len(s.open) == 0 {
		// Forget the goroutine (a trace may have millions) but keep
		// its state for reuse.
		delete(ps.gs, g)
		if len(ps.free) < 64 {
			ps.free = append(ps.free, s)
		}
	}
}

func (ps *parser) sample(ev trace.Event) {
	ps.stack = ps.stack[:0]
	for f := range ev.Stack().Frames() {
		ps.stack = append(ps.stack, ps.cpu.Location(pbuild.Frame{Name: f.Func, File: f.File, Line: int64(f.Line)}))
	}
	if len(ps.stack) == 0 {
		ps.cpu.Warnf("CPU sample without a stack dropped")
		return
	}
	g := ev.Goroutine()
	var region, task string
	if s, ok := ps.gs[g]; ok && len(s.open) > 0 {
		region, task = s.open[len(s.open)-1].typ, s.open[len(s.open)-1].task
	}
	ps.cpu.Add(ps.stack, 1, DefaultPeriod, ps.label(g, ev.Thread(), region, task))
	ps.nCPU++
	// Keep a bounded number of gaps between samples of one thread: a thread
	// that stays busy is sampled once per profiling period.
	if m := ev.Thread(); m != trace.NoThread && len(ps.gaps) < maxGaps {
		if last, ok := ps.lastSample[m]; ok && ev.Time() > last {
			ps.gaps = append(ps.gaps, int64(ev.Time()-last))
		}
		ps.lastSample[m] = ev.Time()
	}
}

func (ps *parser) finish(view string) (*profile.Profile, error) {
	// Close what is still open, in goroutine order for deterministic output.
	open := 0
	for _, s := range ps.gs {
		open += len(s.open)
	}
	if open > 0 {
		gids := make([]trace.GoID, 0, len(ps.gs))
		for g := range ps.gs {
			gids = append(gids, g)
		}
		slices.Sort(gids)
		for _, g := range gids {
			s := ps.gs[g]
			s.overflow = 0
			for len(s.open) > 0 {
				ps.flush(g, s, ps.last, 1)
				s.last = ps.last
				s.open = s.open[:len(s.open)-1]
				ps.nRegions++
			}
		}
		ps.regions.Warnf("%d regions still open when the trace ended; closed at the last event", open)
	}
	if ps.orphanEnds > 0 {
		ps.regions.Warnf("%d regions ended without a begin (begun before tracing started); counted from the first event", ps.orphanEnds)
	}
	span := int64(ps.last - ps.first)
	useCPU := ps.nCPU > 0
	switch view {
	case pbuild.ViewSamples:
		if ps.nCPU == 0 && ps.nRegions > 0 {
			ps.regions.Warnf("trace has no CPU samples (CPU profiling was off while tracing); showing user regions")
			useCPU = false
		} else {
			useCPU = true
		}
	case pbuild.ViewDurations:
		if ps.nRegions == 0 && ps.nCPU > 0 {
			ps.cpu.Warnf("trace has no user regions; showing CPU samples")
			useCPU = true
		} else {
			useCPU = false
		}
	}
	b, period := ps.regions, int64(0)
	if useCPU {
		b, period = ps.cpu, DefaultPeriod
		// A trace does not record the profiling rate. At 100 Hz a busy
		// thread's samples are 10ms apart, so most gaps are 10ms or more;
		// a median well below says the rate was higher.
		if len(ps.gaps) >= 10 {
			if med := pbuild.Median(ps.gaps); med < DefaultPeriod/2 {
				b.Warnf("CPU samples of a thread are typically %v apart: the profiling rate was likely above 100 Hz, but each sample is counted as 10ms", time.Duration(med))
			}
		}
	}
	if ps.nCPU == 0 && ps.nRegions == 0 {
		b.Warnf("trace has neither CPU samples nor user regions: empty profile (run CPU profiling while tracing, or annotate code with trace.WithRegion)")
	}
	if ps.wallStart > 0 {
		b.Profile().TimeNanos = ps.wallStart
	}
	return b.Finish(FormatName, period, span)
}
