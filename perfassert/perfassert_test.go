package perfassert_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/limits"
	"github.com/hotbudget/hotbudget/loaders"
	"github.com/hotbudget/hotbudget/perfassert"
	"github.com/stretchr/testify/assert"
)

// Compile-time proof that the standard and testify test types fit TestingT
// (testing.TB's is in perfassert.go, built with the package itself).
var (
	_ perfassert.TestingT = (*testing.T)(nil)
	_ perfassert.TestingT = (*testing.B)(nil)
	_ perfassert.TestingT = assert.TestingT(nil)
)

// fakeT records what an assertion reports.
type fakeT struct {
	name    string
	errors  []string
	logs    []string
	helpers int
}

func (f *fakeT) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeT) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *fakeT) Helper()      { f.helpers++ }
func (f *fakeT) Name() string { return f.name }

func (f *fakeT) text() string { return strings.Join(f.errors, "\n") }

// minimalT has only Errorf, like testify's assert.TestingT.
type minimalT struct{ errors []string }

func (m *minimalT) Errorf(format string, args ...any) {
	m.errors = append(m.errors, fmt.Sprintf(format, args...))
}

// handFolded is a hand-worked profile (folded stacks, 1 ms per count):
//
//	main.busy    self 60ms (60+0)  total 70ms (60+10)
//	main.helper  self 35ms (25+10) total 35ms
//	main.run     self 0            total 95ms
//	main.main    self 0            total 100ms
//	runtime.gcBgMarkWorker self 5ms
//
// Samples through busy or helper: 60+25+10 = 95ms (the 10ms stack holds both
// and counts once).
const handFolded = `main.main;main.run;main.busy 60
main.main;main.run;main.helper 25
main.main;main.run;main.busy;main.helper 10
main.main;runtime.gcBgMarkWorker 5
`

func load(t testing.TB, folded string) *profile.Profile {
	t.Helper()
	p, err := loaders.Read(strings.NewReader(folded), loaders.WithFormat(loaders.FormatFolded))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckHandWorked(t *testing.T) {
	p := load(t, handFolded)
	ms := time.Millisecond
	tests := []struct {
		name      string
		fn        string
		limit     limits.Limit
		opts      []perfassert.Option
		wantTime  time.Duration
		wantShare float64
		wantN     int64
		pass      bool
	}{
		{"self at the limit passes (limits are inclusive)", "main.busy", limits.Limit{Quantity: limits.SelfTime, Time: 60 * ms}, nil, 60 * ms, 0.60, 60, true},
		{"self over the limit fails", "main.busy", limits.Limit{Quantity: limits.SelfTime, Time: 59 * ms}, nil, 60 * ms, 0.60, 60, false},
		{"total counts the stack where busy calls helper", "main.busy", limits.Limit{Quantity: limits.TotalTime, Time: 69 * ms}, nil, 70 * ms, 0.70, 70, false},
		{"self of a function that is a leaf in two stacks", "main.helper", limits.Limit{Quantity: limits.SelfShare, Share: 0.35}, nil, 35 * ms, 0.35, 35, true},
		{"total share of a function with no self time", "main.run", limits.Limit{Quantity: limits.TotalShare, Share: 0.9}, nil, 95 * ms, 0.95, 95, false},
		{"regexp pools samples, counting a sample once", `^main\.(busy|helper)$`, limits.Limit{Quantity: limits.TotalTime, Time: time.Second}, []perfassert.Option{perfassert.Regexp()}, 95 * ms, 0.95, 95, true},
		{"regexp self sums leaves", `main\.(busy|helper)`, limits.Limit{Quantity: limits.SelfTime, Time: 94 * ms}, []perfassert.Option{perfassert.Regexp()}, 95 * ms, 0.95, 95, false},
		{"zero limit on a function with time fails", "runtime.gcBgMarkWorker", limits.Limit{Quantity: limits.SelfTime}, nil, 5 * ms, 0.05, 5, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := limits.Check(p, tc.fn, tc.limit, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if time.Duration(r.Value) != tc.wantTime || r.Samples != tc.wantN || !near(r.Share, tc.wantShare) || r.Passed != tc.pass {
				t.Errorf("got time %v samples %d share %v passed %v, want %v %d %v %v\n%s", time.Duration(r.Value), r.Samples, r.Share, r.Passed, tc.wantTime, tc.wantN, tc.wantShare, tc.pass, r)
			}
			if time.Duration(r.Total) != 100*ms || r.TotalSamples != 100 || r.Missing {
				t.Errorf("total %v / %d samples, missing %v; want 100ms / 100, false", r.Total, r.TotalSamples, r.Missing)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestAdaptersReportFailureText(t *testing.T) {
	p := load(t, handFolded)
	ms := time.Millisecond
	tests := []struct {
		name   string
		run    func(perfassert.TestingT) bool
		wants  []string
		absent []string
	}{
		{
			name: "MaxSelfTime: got before want, share, top functions and stacks",
			run: func(t perfassert.TestingT) bool {
				return perfassert.MaxSelfTime(t, p, "main.busy", 50*ms, perfassert.Named("hand.folded"))
			},
			wants: []string{
				"perfassert.MaxSelfTime: hand.folded: main.busy self time 60ms (60.00% of 100ms total, 60 samples), want at most 50ms\n",
				"top functions by self time:\n",
				"      60ms  60.00%       70ms  70.00%  main.busy\n",
				"      35ms  35.00%       35ms  35.00%  main.helper\n",
				"heaviest stacks (leaf first):\n          60ms  60.00%  main.busy <- main.run <- main.main\n",
				"warning: folded stacks hold sample counts only", // the loader's warning
			},
			absent: []string{"warning: only"},
		},
		{
			name: "MaxTotalTime orders context by total time",
			run: func(t perfassert.TestingT) bool {
				return perfassert.MaxTotalTime(t, p, "main.busy", 65*ms)
			},
			wants: []string{
				"perfassert.MaxTotalTime: profile: main.busy total time 70ms (70.00% of 100ms total, 70 samples), want at most 65ms",
				"top functions by total time:\n          self   self%      total  total%  function\n             0   0.00%      100ms 100.00%  main.main\n",
				"      10ms  10.00%  main.helper <- main.busy <- main.run <- main.main",
			},
		},
		{
			name: "MaxSelfShare states the share limit",
			run: func(t perfassert.TestingT) bool {
				return perfassert.MaxSelfShare(t, p, "main.helper", 0.30)
			},
			wants: []string{"main.helper self time 35ms (35.00% of 100ms total, 35 samples), share 35.00%, want at most 30.00%"},
		},
		{
			name: "MaxTotalShare with a regexp lists what matched",
			run: func(t perfassert.TestingT) bool {
				return perfassert.MaxTotalShare(t, p, `^main\.(busy|helper)$`, 0.5, perfassert.Regexp())
			},
			wants: []string{
				`2 functions matching regexp "^main\\.(busy|helper)$" total time 95ms (95.00% of 100ms total, 95 samples), share 95.00%, want at most 50.00%`,
				"matched:\n    main.busy (self 60ms, total 70ms)\n    main.helper (self 35ms, total 35ms)\n",
			},
		},
		{
			name: "a typo fails with did you mean",
			run: func(t perfassert.TestingT) bool {
				return perfassert.MaxSelfTime(t, p, "main.bussy", time.Second)
			},
			wants: []string{
				`perfassert.MaxSelfTime: profile: no function named "main.bussy" among 5 functions (100ms total, 100 samples)`,
				"did you mean:\n    main.busy\n",
			},
		},
		{
			name: "a name without its package is found by substring",
			run: func(t perfassert.TestingT) bool {
				return perfassert.MaxTotalTime(t, p, "helper", time.Second)
			},
			wants: []string{"did you mean:\n    main.helper"},
		},
		{
			name: "wrong case is suggested",
			run: func(t perfassert.TestingT) bool {
				return perfassert.MaxTotalTime(t, p, "Main.Run", time.Second)
			},
			wants: []string{"did you mean:\n    main.run"},
		},
		{
			name: "a regexp that matches nothing fails too",
			run: func(t perfassert.TestingT) bool {
				return perfassert.MaxSelfShare(t, p, `^main\.busyy$`, 1, perfassert.Regexp())
			},
			wants: []string{`no function matches regexp "^main\\.busyy$"`, "    main.busy"},
		},
		{
			name: "an invalid regexp is an error, not a miss",
			run: func(t perfassert.TestingT) bool {
				return perfassert.MaxSelfShare(t, p, `main.(busy`, 1, perfassert.Regexp())
			},
			wants: []string{`perfassert.MaxSelfShare("main.(busy"): perfassert: selector: error parsing regexp`},
		},
		{
			name: "a negative limit is a programming error",
			run: func(t perfassert.TestingT) bool {
				return perfassert.MaxSelfTime(t, p, "main.busy", -time.Millisecond)
			},
			wants: []string{"negative self time limit -1ms"},
		},
		{
			name: "a share above 1 is a programming error",
			run: func(t perfassert.TestingT) bool {
				return perfassert.MaxTotalShare(t, p, "main.busy", 1.5)
			},
			wants: []string{"total share limit 1.5 is not a share in [0,1]"},
		},
		{
			name: "an empty thread selector is a programming error",
			run: func(t perfassert.TestingT) bool {
				return perfassert.MaxTotalShare(t, p, "main.busy", 1, perfassert.WithSelection(analysis.Selection{Threads: []string{""}}))
			},
			wants: []string{"perfassert.MaxTotalShare(\"main.busy\"): perfassert: empty thread name or tid in the selection"},
		},
		{
			name: "a nil profile fails",
			run: func(t perfassert.TestingT) bool {
				return perfassert.MaxSelfTime(t, nil, "main.busy", time.Second)
			},
			wants: []string{"perfassert.MaxSelfTime(\"main.busy\"): perfassert: nil profile"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeT{}
			if tc.run(ft) {
				t.Fatalf("assertion passed, want a failure")
			}
			if len(ft.errors) != 1 {
				t.Fatalf("got %d Errorf calls, want 1: %q", len(ft.errors), ft.errors)
			}
			if ft.helpers == 0 {
				t.Errorf("Helper was not called")
			}
			got := ft.text()
			for _, w := range tc.wants {
				if !strings.Contains(got, w) {
					t.Errorf("failure text lacks %q:\n%s", w, got)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(got, a) {
					t.Errorf("failure text has %q:\n%s", a, got)
				}
			}
		})
	}
}

// TestPassingAssertionsLogWhatTheyMeasured: a pass is one log line (shown by
// go test -v) with the measured value and the limit, never an error.
func TestPassingAssertionsLogWhatTheyMeasured(t *testing.T) {
	p := load(t, handFolded)
	ft := &fakeT{}
	ok := perfassert.MaxSelfTime(ft, p, "main.busy", 60*time.Millisecond) &&
		perfassert.MaxTotalTime(ft, p, "main.main", 200*time.Millisecond) &&
		perfassert.MaxSelfShare(ft, p, "main.helper", 0.35) &&
		perfassert.MaxTotalShare(ft, p, "main.run", 1)
	if !ok || len(ft.errors) != 0 || len(ft.logs) != 4 {
		t.Fatalf("passing assertions: ok=%v errors=%q logs=%q", ok, ft.errors, ft.logs)
	}
	for i, want := range []string{
		"perfassert.MaxSelfTime: profile: main.busy self time 60ms (60.00% of 100ms total, 60 samples), within 60ms (100.00% of the limit)\n",
		"perfassert.MaxTotalTime: profile: main.main total time 100ms (100.00% of 100ms total, 100 samples), within 200ms (50.00% of the limit)\n",
		"perfassert.MaxSelfShare: profile: main.helper self time 35ms (35.00% of 100ms total, 35 samples), share 35.00%, within 35.00% (100.00% of the limit)\n",
		"perfassert.MaxTotalShare: profile: main.run total time 95ms (95.00% of 100ms total, 95 samples), share 95.00%, within 100.00% (95.00% of the limit)\n",
	} {
		if !strings.HasPrefix(ft.logs[i], want) {
			t.Errorf("log %d:\n got %q\nwant prefix %q", i, ft.logs[i], want)
		}
	}
	if strings.Contains(strings.Join(ft.logs, ""), "top functions") {
		t.Errorf("a pass logs the failure context:\n%s", strings.Join(ft.logs, "\n"))
	}
	// The minimal interface works as well.
	mt := &minimalT{}
	if !perfassert.MaxSelfTime(mt, p, "main.busy", time.Second) || len(mt.errors) != 0 {
		t.Fatalf("minimal TestingT: %q", mt.errors)
	}
	if perfassert.MaxSelfTime(mt, p, "main.busy", time.Millisecond) || len(mt.errors) != 1 {
		t.Fatalf("minimal TestingT did not get the failure: %q", mt.errors)
	}
}

func TestNeverPassesVacuously(t *testing.T) {
	t.Run("AllowMissing passes and logs the miss", func(t *testing.T) {
		ft := &fakeT{}
		if !perfassert.MaxSelfTime(ft, load(t, handFolded), "main.gone", 0, perfassert.AllowMissing()) {
			t.Fatalf("failed: %s", ft.text())
		}
		if len(ft.logs) != 1 || !strings.Contains(ft.logs[0], `no function named "main.gone" among 5 functions (100ms total, 100 samples); allowed by AllowMissing`) {
			t.Errorf("log = %q", ft.logs)
		}
	})
	t.Run("an empty profile fails even with AllowMissing", func(t *testing.T) {
		ft := &fakeT{}
		empty := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
		if perfassert.MaxSelfTime(ft, empty, "main.busy", time.Second, perfassert.AllowMissing()) {
			t.Fatal("passed on an empty profile")
		}
		// Selection that leaves nothing is the same.
		if perfassert.MaxSelfTime(ft, load(t, handFolded), "main.busy", time.Second, perfassert.AllowMissing(), perfassert.WithSelection(analysis.Selection{Threads: []string{"nope"}})) {
			t.Fatal("passed on an empty profile")
		}
		if !strings.Contains(ft.text(), "the profile has no samples") {
			t.Errorf("text: %s", ft.text())
		}
	})
	t.Run("too few samples is said out loud", func(t *testing.T) {
		ft := &fakeT{}
		p := load(t, "main.main;main.rare 3\nmain.main;main.hot 97\n")
		if !perfassert.MaxSelfTime(ft, p, "main.rare", time.Second) {
			t.Fatalf("failed: %s", ft.text())
		}
		want := "warning: only 3 samples in the measured self time: a sampled measurement this small is noise (±58%)"
		if len(ft.logs) != 1 || !strings.Contains(ft.logs[0], want) {
			t.Errorf("logs = %q, want %q", ft.logs, want)
		}
		// And in the failure text when it fails.
		ft = &fakeT{}
		perfassert.MaxSelfTime(ft, p, "main.rare", time.Millisecond)
		if !strings.Contains(ft.text(), want) {
			t.Errorf("failure text lacks the warning:\n%s", ft.text())
		}
	})
}

func TestThreadAndProcessSelection(t *testing.T) {
	fn := func(id uint64, name string) *profile.Location {
		return &profile.Location{ID: id, Line: []profile.Line{{Function: &profile.Function{ID: id, Name: name}}}}
	}
	work, idle := fn(1, "work"), fn(2, "(idle)")
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{work}, Value: []int64{30, 30e6}, Label: map[string][]string{"thread": {"main"}, "tid": {"1"}, "pid": {"7"}}},
			{Location: []*profile.Location{work}, Value: []int64{10, 10e6}, Label: map[string][]string{"thread": {"worker"}, "tid": {"2"}, "pid": {"7"}}},
			{Location: []*profile.Location{idle}, Value: []int64{60, 60e6}, Label: map[string][]string{"thread": {"main"}, "tid": {"1"}, "pid": {"8"}}},
		},
		Location: []*profile.Location{work, idle},
		Function: []*profile.Function{work.Line[0].Function, idle.Line[0].Function},
	}
	ms := time.Millisecond
	tests := []struct {
		name      string
		opts      []perfassert.Option
		wantTime  time.Duration
		wantShare float64
	}{
		{"everything", nil, 40 * ms, 0.4},
		{"thread by name", []perfassert.Option{perfassert.WithSelection(analysis.Selection{Threads: []string{"worker"}})}, 10 * ms, 1},
		{"thread by tid", []perfassert.Option{perfassert.WithSelection(analysis.Selection{Threads: []string{"1"}})}, 30 * ms, 0.3333333333333333},
		{"union of threads", []perfassert.Option{perfassert.WithSelection(analysis.Selection{Threads: []string{"1", "worker"}})}, 40 * ms, 0.4},
		{"process by pid", []perfassert.Option{perfassert.WithSelection(analysis.Selection{Processes: []string{"7"}})}, 40 * ms, 1},
		{"synthetic frames dropped from the total", []perfassert.Option{perfassert.WithSelection(analysis.Selection{DropSynthetic: true})}, 40 * ms, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := limits.Check(p, "work", limits.Limit{Quantity: limits.SelfShare, Share: 1}, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if time.Duration(r.Value) != tc.wantTime || !near(r.Share, tc.wantShare) {
				t.Errorf("time %v share %v, want %v %v", time.Duration(r.Value), r.Share, tc.wantTime, tc.wantShare)
			}
		})
	}
	// A process with none of the function's samples: the selector misses.
	r, err := limits.Check(p, "work", limits.Limit{Quantity: limits.SelfTime, Time: time.Second}, perfassert.WithSelection(analysis.Selection{Processes: []string{"8"}}))
	if err != nil || !r.Missing || r.Passed {
		t.Errorf("process 8: err %v missing %v passed %v", err, r.Missing, r.Passed)
	}
}

// TestAgreesWithAnalysisOnRealProfiles checks, on real Go profiles, that each
// function's self and total as checked equal the analysis table's (which is
// itself tested against go tool pprof -top), including inlined frames and
// recursion.
func TestAgreesWithAnalysisOnRealProfiles(t *testing.T) {
	for _, path := range []string{
		"../testdata/pprof/busy.pb.gz",
		"../testdata/corpus/pprof/sample.cpu",
		"../testdata/corpus/pprof/simple.prof",
	} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			p, err := loaders.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			table, err := analysis.Functions(p)
			if err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			for _, f := range table.Functions {
				count[f.Name]++
			}
			checked := 0
			for _, f := range table.Functions {
				if count[f.Name] != 1 {
					continue
				}
				self, err := limits.Check(p, f.Name, limits.Limit{Quantity: limits.SelfTime, Time: time.Duration(f.Self)})
				if err != nil {
					t.Fatal(err)
				}
				total, err := limits.Check(p, f.Name, limits.Limit{Quantity: limits.TotalShare, Share: f.TotalShare})
				if err != nil {
					t.Fatal(err)
				}
				if self.Value != f.Self || self.Samples != f.SelfSamples || !self.Passed ||
					total.Value != f.Total || total.Samples != f.TotalSamples || !total.Passed {
					t.Errorf("%s: checked self %v (%d) total %v (%d), table self %v (%d) total %v (%d)",
						f.Name, time.Duration(self.Value), self.Samples, time.Duration(total.Value), total.Samples, f.Self, f.SelfSamples, f.Total, f.TotalSamples)
				}
				checked++
			}
			if checked < 5 {
				t.Fatalf("only %d functions checked", checked)
			}
		})
	}
}

// TestBusyGoProfile bounds the real busy.pb.gz by the figures go tool pprof
// -top prints for it (see testdata/pprof/gen).
func TestBusyGoProfile(t *testing.T) {
	p, err := loaders.Load("../testdata/pprof/busy.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	// go tool pprof -top: 150ms flat, 990ms cum for main.parseRecords; total 1.48s.
	ft := &fakeT{}
	if !perfassert.MaxSelfTime(ft, p, "main.parseRecords", 150*time.Millisecond) ||
		!perfassert.MaxTotalTime(ft, p, "main.parseRecords", 990*time.Millisecond) {
		t.Fatal(ft.text())
	}
	if perfassert.MaxTotalTime(ft, p, "main.parseRecords", 980*time.Millisecond) {
		t.Fatal("980ms bound passed")
	}
	if want := "main.parseRecords total time 990ms (66.89% of 1.48s total, 99 samples), want at most 980ms"; !strings.Contains(ft.text(), want) {
		t.Errorf("text lacks %q:\n%s", want, ft.text())
	}
	// The V8 profile of the same kind of program, by regexp on its busy function.
	v8, err := loaders.Load("../testdata/cpuprofile/busy.cpuprofile")
	if err != nil {
		t.Fatal(err)
	}
	r, err := limits.Check(v8, "busy", limits.Limit{Quantity: limits.SelfShare, Share: 1}, perfassert.Regexp())
	if err != nil || r.Missing || r.Share < 0.5 {
		t.Fatalf("busy in busy.cpuprofile: err %v, %v", err, r)
	}
}

func TestWarningsOfTheLoaderAreShown(t *testing.T) {
	// A folded line with a bad count is skipped by the loader with a
	// warning; the failure text carries it.
	p, err := loaders.Read(strings.NewReader("a;b 5\n"), loaders.WithFormat(loaders.FormatFolded))
	if err != nil {
		t.Fatal(err)
	}
	p.Comments = append(p.Comments, "hotbudget warning: something was repaired")
	ft := &fakeT{}
	perfassert.MaxSelfTime(ft, p, "b", 0)
	if !strings.Contains(ft.text(), "warning: something was repaired") {
		t.Errorf("text:\n%s", ft.text())
	}
}

func TestSelectorsAreExactByDefault(t *testing.T) {
	p := load(t, "pkg.F 10\npkg.F.func1 30\npkg.FF 50\n")
	r, err := limits.Check(p, "pkg.F", limits.Limit{Quantity: limits.SelfTime, Time: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(r.Value) != 10*time.Millisecond || len(r.Matched) != 1 {
		t.Errorf("exact selector measured %v over %d functions, want 10ms over 1", time.Duration(r.Value), len(r.Matched))
	}
	r, err = limits.Check(p, regexp.QuoteMeta("pkg.F"), limits.Limit{Quantity: limits.SelfTime, Time: time.Second}, perfassert.Regexp())
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(r.Value) != 90*time.Millisecond || len(r.Matched) != 3 {
		t.Errorf("unanchored regexp measured %v over %d functions, want 90ms over 3", time.Duration(r.Value), len(r.Matched))
	}
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}

func TestExactProfilesAreNotSampled(t *testing.T) {
	b := pbuild.New(pbuild.Exact)
	run := b.Location(pbuild.Frame{Name: "region.run"})
	io := b.Location(pbuild.Frame{Name: "region.io"})
	b.Add([]*profile.Location{io, run}, 2, int64(3*time.Millisecond), nil)
	b.Add([]*profile.Location{run}, 1, int64(7*time.Millisecond), nil)
	p, err := b.Finish("test", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ft := &fakeT{}
	if perfassert.MaxTotalTime(ft, p, "region.run", 9*time.Millisecond) {
		t.Fatal("passed")
	}
	text := ft.text()
	if want := "region.run total time 10ms (100.00% of 10ms total, exact), want at most 9ms"; !strings.Contains(text, want) {
		t.Errorf("text lacks %q:\n%s", want, text)
	}
	if strings.Contains(text, "samples") {
		t.Errorf("exact data described as samples:\n%s", text)
	}
}

func TestNonTimeProfileIsAnError(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "alloc"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}},
		Sample:     []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{4096}}},
		Location:   []*profile.Location{loc},
		Function:   []*profile.Function{fn},
	}
	_, err := limits.Check(p, "alloc", limits.Limit{Quantity: limits.SelfTime, Time: time.Second})
	if !errors.Is(err, analysis.ErrWrongUnit) {
		t.Errorf("err = %v, want analysis.ErrWrongUnit", err)
	}
	_, err = limits.Check(load(t, handFolded), "main.busy", limits.Limit{Quantity: limits.SelfTime, Time: time.Second}, perfassert.WithSelection(analysis.Selection{SampleType: "alloc_space"}))
	if err == nil || !strings.Contains(err.Error(), `no sample type "alloc_space"`) {
		t.Errorf("err = %v", err)
	}
}

// BenchmarkCheckLarge checks one function of large.cpu (20k samples, 23k
// locations): the cost of one assertion on a big real profile.
func BenchmarkCheckLarge(b *testing.B) {
	p, err := loaders.Load("../testdata/corpus/pprof/large.cpu")
	if err != nil {
		b.Fatal(err)
	}
	table, err := analysis.Functions(p)
	if err != nil {
		b.Fatal(err)
	}
	name := table.Functions[0].Name
	b.ReportAllocs()
	for b.Loop() {
		if _, err := limits.Check(p, name, limits.Limit{Quantity: limits.TotalTime, Time: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMissLarge is the failing path: a miss on large.cpu computes
// did-you-mean suggestions over every function.
func BenchmarkMissLarge(b *testing.B) {
	p, err := loaders.Load("../testdata/corpus/pprof/large.cpu")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := limits.Check(p, "runtime.mallocgcc", limits.Limit{Quantity: limits.TotalTime, Time: time.Hour})
		if err != nil || !r.Missing {
			b.Fatal(err, r)
		}
	}
}

func TestPerIteration(t *testing.T) {
	p := load(t, handFolded)
	p.Comments = append(p.Comments, "hotbudget iterations: 10") // as Capture records it
	ms := time.Millisecond
	ft := &fakeT{}
	if !perfassert.MaxSelfTime(ft, p, "main.busy", 6*ms, perfassert.PerIteration()) {
		t.Fatalf("60ms over 10 runs is 6ms a run: %s", ft.text())
	}
	if perfassert.MaxTotalTime(ft, p, "main.busy", 6*ms, perfassert.PerIteration()) {
		t.Fatal("70ms over 10 runs passed a 6ms bound")
	}
	if want := "main.busy total time 7ms per iteration (70.00% of 100ms total over 10 iterations, 70 samples), want at most 6ms"; !strings.Contains(ft.text(), want) {
		t.Errorf("text lacks %q:\n%s", want, ft.text())
	}
	if strings.Contains(ft.text(), "PerIteration() bounds") {
		t.Errorf("the hint to use PerIteration is shown although it is used:\n%s", ft.text())
	}

	// Without the option the time is the sum, and the text says how to bound a run.
	ft = &fakeT{}
	perfassert.MaxSelfTime(ft, p, "main.busy", 6*ms)
	for _, want := range []string{"main.busy self time 60ms (60.00% of 100ms total, 60 samples), want at most 6ms", "warning: the profile holds 10 runs of a captured function"} {
		if !strings.Contains(ft.text(), want) {
			t.Errorf("text lacks %q:\n%s", want, ft.text())
		}
	}
	// Shares do not change.
	r, err := limits.Check(p, "main.busy", limits.Limit{Quantity: limits.SelfShare, Share: 0.6}, perfassert.PerIteration())
	if err != nil || !r.Passed || r.Share != 0.6 || time.Duration(r.Value) != 60*ms {
		t.Errorf("share check per iteration: %v %v", err, r)
	}
	// A profile without an iteration count cannot be divided.
	if _, err := limits.Check(load(t, handFolded), "main.busy", limits.Limit{Quantity: limits.SelfTime}, perfassert.PerIteration()); err == nil || !strings.Contains(err.Error(), "needs the work a profile records, and the profile records none") {
		t.Errorf("err = %v", err)
	}
}

// TestLostSamplesAreLoggedOnPass: a capture records the CPU time its
// samples stand for and the CPU time the process used; when samples were
// lost, a time check says so even when it passes, and a share check,
// which lost samples leave alone, does not. The decision is the record's
// numbers: a warning of the same words in the comments decides nothing.
func TestLostSamplesAreLoggedOnPass(t *testing.T) {
	p := load(t, handFolded)
	meta.Set(p, meta.Record{SampledNanos: 100e6, UsedNanos: 400e6})
	ft := &fakeT{}
	if !perfassert.MaxSelfTime(ft, p, "main.busy", time.Second) {
		t.Fatal(ft.text())
	}
	if len(ft.logs) != 1 || !strings.Contains(ft.logs[0], "warning: the samples account for 100ms of CPU time but the process used 400ms while capturing: samples were lost") {
		t.Errorf("time check on a profile that lost samples: logs %q", ft.logs)
	}
	r, err := limits.Check(p, "main.busy", limits.Limit{Quantity: limits.SelfShare, Share: 1})
	if err != nil || !r.LostSamples || len(r.Warnings) != 0 {
		t.Errorf("share check: err %v, LostSamples %v, warnings %q; shares are unaffected by lost samples", err, r.LostSamples, r.Warnings)
	}
	// Enough samples: nothing to say.
	meta.Set(p, meta.Record{SampledNanos: 390e6, UsedNanos: 400e6})
	if r, err := limits.Check(p, "main.busy", limits.Limit{Quantity: limits.SelfTime, Time: time.Second}); err != nil || r.LostSamples || strings.Contains(r.String(), "lost") {
		t.Errorf("no samples lost: err %v, %v", err, r)
	}
	// Words decide nothing.
	q := load(t, handFolded)
	q.Comments = append(q.Comments, "hotbudget warning: the samples account for 100ms of CPU time but the process used 400ms while capturing: samples were lost")
	if r, err := limits.Check(q, "main.busy", limits.Limit{Quantity: limits.SelfTime, Time: time.Second}); err != nil || r.LostSamples {
		t.Errorf("a warning comment set LostSamples: err %v, %+v", err, r)
	}
}

// raceCapture is handFolded as a capture made under the race detector
// records itself.
func raceCapture(t *testing.T) *profile.Profile {
	p := load(t, handFolded)
	meta.Set(p, meta.Record{Name: "capture of TestRace", Build: "go1.26 linux/amd64", Race: true, WorkUnit: "iteration", Runs: []meta.Run{{Work: 10}}})
	return p
}

// TestRaceDetectorIsNamed: a time limit that fails on a capture made under
// -race says so and how to skip it; SkipUnderRace skips it, logging what
// was measured; shares are checked anyway.
func TestRaceDetectorIsNamed(t *testing.T) {
	p := raceCapture(t)
	ft := &fakeT{}
	if perfassert.MaxSelfTime(ft, p, "main.busy", time.Millisecond, perfassert.PerIteration()) {
		t.Fatal("passed")
	}
	if want := "warning: the profile was captured with the race detector on (go test -race)"; !strings.Contains(ft.text(), want) || !strings.Contains(ft.text(), "perfassert.SkipUnderRace()") {
		t.Errorf("failure lacks %q:\n%s", want, ft.text())
	}
	ft = &fakeT{}
	if !perfassert.MaxSelfTime(ft, p, "main.busy", time.Millisecond, perfassert.PerIteration(), perfassert.SkipUnderRace()) {
		t.Fatalf("SkipUnderRace did not skip:\n%s", ft.text())
	}
	if len(ft.logs) != 1 || !strings.Contains(ft.logs[0], "main.busy self time 6ms per iteration (60.00% of 100ms total over 10 iterations, 60 samples), over 1ms but not checked: the race detector is on (SkipUnderRace)") {
		t.Errorf("skip log %q", ft.logs)
	}
	if perfassert.MaxSelfShare(&fakeT{}, p, "main.busy", 0.1, perfassert.SkipUnderRace()) {
		t.Error("SkipUnderRace skipped a share limit")
	}
	// Without the detector the limit is checked, and nothing is said of it.
	plain := load(t, handFolded)
	ft = &fakeT{}
	if perfassert.MaxSelfTime(ft, plain, "main.busy", time.Millisecond, perfassert.SkipUnderRace()) != raceEnabled {
		t.Errorf("a profile that does not say how it was made: skipped %v, want %v (this binary's -race)", !raceEnabled, raceEnabled)
	}
	if strings.Contains(ft.text(), "race detector") {
		t.Errorf("a loaded profile's failure names the race detector:\n%s", ft.text())
	}
}

// TestHarnessFramesHidden: testing.tRunner and the goroutine's root are left
// out of the top table and off the root of stacks.
func TestHarnessFramesHidden(t *testing.T) {
	p := load(t, "runtime.goexit;testing.tRunner;main.TestX;main.busy 70\nruntime.goexit;testing.tRunner;main.TestX;main.other 30\n")
	ft := &fakeT{}
	perfassert.MaxTotalTime(ft, p, "main.busy", time.Millisecond)
	text := ft.text()
	if strings.Contains(text, "tRunner") || strings.Contains(text, "goexit") {
		t.Errorf("harness frames in the failure:\n%s", text)
	}
	if !strings.Contains(text, "main.busy <- main.TestX\n") || !strings.Contains(text, "100.00%  main.TestX\n") {
		t.Errorf("failure lacks the stack or the top function:\n%s", text)
	}
}

// TestNewCheckerErrors: a Checker needs profiles, none of them nil, and a
// check needs a selector.
func TestNewCheckerErrors(t *testing.T) {
	p := load(t, handFolded)
	tests := []struct {
		name string
		err  func(t *testing.T) error
		want string
	}{
		{"no profiles", func(t *testing.T) error {
			ck, err := limits.NewChecker()
			if ck != nil {
				t.Error("NewChecker() returned a Checker")
			}
			return err
		}, "perfassert: no profiles to check"},
		{"the one profile is nil", func(t *testing.T) error {
			_, err := limits.NewChecker(nil)
			return err
		}, "perfassert: nil profile"},
		{"one of several profiles is nil", func(t *testing.T) error {
			ck, err := limits.NewChecker(p, nil)
			if ck != nil {
				t.Error("NewChecker(p, nil) returned a Checker")
			}
			return err
		}, "perfassert: profile 2 is nil"},
		{"empty function selector", func(t *testing.T) error {
			ck, err := limits.NewChecker(p)
			if err != nil {
				t.Fatal(err)
			}
			r, err := ck.Check("", limits.Limit{Quantity: limits.TotalTime, Time: time.Second})
			if r != nil {
				t.Errorf("Check(\"\") returned a result: %v", r)
			}
			return err
		}, "perfassert: empty function selector"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(t); err == nil || err.Error() != tc.want {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
