package perfassert_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/perfevent"
	"github.com/hotbudget/hotbudget/internal/samplercheck"
	"github.com/hotbudget/hotbudget/internal/testchild"
	"github.com/hotbudget/hotbudget/perfassert"
)

var agreeSink uint64

// agreeLeaf has no locals and calls nothing: the compiler gives it no
// frame, and a frame-pointer walk from inside it skips its caller.
//
//go:noinline
func agreeLeaf(x uint64) uint64 {
	for range 32 {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// agreeInline is inlined into agreeLight: profiles name it all the same.
func agreeInline(x uint64) uint64 { return x ^ x>>7 ^ x<<3 }

//go:noinline
func agreeHeavy(n int) uint64 {
	var x uint64
	for i := 0; i < n; i++ {
		x = agreeLeaf(x) + uint64(i)
	}
	return x
}

//go:noinline
func agreeLight(n int) uint64 {
	x := uint64(1)
	for i := 0; i < n*24; i++ {
		x = agreeInline(x) + uint64(i)
	}
	return x
}

func agreeWork() {
	agreeSink += agreeHeavy(3000) + agreeLight(1000)
}

const agreePkg = "github.com/hotbudget/hotbudget/perfassert_test."

// TestSamplersAgree captures the same work with the perf sampler and with
// runtime/pprof alone: the self and total shares of each function agree
// within sampling error. A frameless leaf (agreeLeaf) whose caller
// a frame-pointer walk would miss, and an inlined one (agreeInline), are
// among them. The tolerance is 4.5 standard errors of the difference of two
// binomial proportions (the two-proportion test, from each side's sample
// count and the pooled share): a chance failure about once in 150,000
// comparisons. The runtime/pprof side runs at the
// rate the kernel was measured to deliver (hence a child process: the
// runtime complains on stderr about any rate but 100 Hz). Where the perf
// sampler fails samplercheck's check before or after its capture, Capture
// does not use it (TestSamplerMisattributesFallsBack,
// TestSamplerWrongDuringCaptureRedone): the test is skipped with the
// check's figures, since there is no capture of the product's to judge.
func TestSamplersAgree(t *testing.T) {
	if _, err := perfevent.Open(perfevent.Config{CPU: -1, Disabled: true, Pages: 1}); errors.Is(err, perfevent.ErrUnavailable) {
		t.Skipf("perf events refused here: %v", err)
	}
	if r, err := samplercheck.Recent(perfevent.DefaultPeriod); err == nil && r.Misattributes() {
		t.Skipf("this machine's perf sampler is wrong now, and Capture does not use it while it is: %s", r)
	}
	if testchild.Rerun(t, testchild.RuntimeRateLine) {
		return
	}
	fast := perfassert.Capture(t, agreeWork, perfassert.Sampler("perf"), perfassert.MinSamples(3000), perfassert.MaxDuration(8*time.Second))
	// The check Capture makes after a capture with the perf sampler: where
	// it finds the sampler wrong, Capture would have redone the capture
	// with runtime/pprof, so the perf capture is not the product's.
	if fresh, pooled, err := samplercheck.Again(perfevent.DefaultPeriod, 400); err == nil {
		if w, wrong := samplercheck.Wrong(fresh, pooled); wrong {
			t.Skipf("this machine's perf sampler went wrong during the capture, and Capture would have redone it with runtime/pprof: %s", w)
		}
	}
	slow := perfassert.Capture(t, agreeWork, perfassert.Sampler("pprof"), perfassert.MinSamples(400), perfassert.MaxDuration(10*time.Second))
	if fast == nil || slow == nil {
		t.Fatal("no profile")
	}
	for _, c := range []struct {
		p       *profile.Profile
		sampler string
	}{{fast, "perf"}, {slow, "pprof"}} {
		if rec, _, _ := meta.Get(c.p); rec.Sampler != c.sampler {
			t.Errorf("record says sampler %q, want %q", rec.Sampler, c.sampler)
		}
	}
	ft, err := analysis.Functions(fast)
	if err != nil {
		t.Fatal(err)
	}
	st, err := analysis.Functions(slow)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("perf: %d samples (period %v); runtime/pprof: %d samples (period %v)", ft.TotalSamples, time.Duration(fast.Period), st.TotalSamples, time.Duration(slow.Period))
	if fast.Period != perfevent.DefaultPeriod.Nanoseconds() {
		t.Errorf("perf capture's period %v, want %v: no goroutine was started", time.Duration(fast.Period), perfevent.DefaultPeriod)
		for _, smp := range fast.Sample {
			if n := len(smp.Value); n > 1 && smp.Value[0] > 0 && smp.Value[n-1]/smp.Value[0] > perfevent.DefaultPeriod.Nanoseconds() {
				var names []string
				for _, l := range smp.Location {
					for _, ln := range l.Line {
						names = append(names, ln.Function.Name)
					}
				}
				t.Logf("a sample of %v a count, labels %v: %s", time.Duration(smp.Value[n-1]/smp.Value[0]), smp.Label, strings.Join(names, " < "))
			}
		}
	}
	find := func(tab *analysis.Table, name string) analysis.Function {
		for _, f := range tab.Functions {
			if f.Name == name {
				return f
			}
		}
		t.Fatalf("%s not in the profile", name)
		return analysis.Function{}
	}
	for _, name := range []string{"agreeLeaf", "agreeHeavy", "agreeLight", "agreeInline"} {
		a, b := find(ft, agreePkg+name), find(st, agreePkg+name)
		for _, m := range []struct {
			what   string
			p1, p2 float64
		}{{"self", a.SelfShare, b.SelfShare}, {"total", a.TotalShare, b.TotalShare}} {
			n1, n2 := float64(ft.TotalSamples), float64(st.TotalSamples)
			// The two-proportion test's standard error, from the
			// pooled share (a share of 0 on one side still has one).
			pool := (m.p1*n1 + m.p2*n2) / (n1 + n2)
			tol := 4.5 * math.Sqrt(pool*(1-pool)*(1/n1+1/n2))
			t.Logf("%-11s %-5s share: perf %5.1f%%, runtime/pprof %5.1f%%, difference %+5.1f%% (tolerance ±%.1f%%)", name, m.what, 100*m.p1, 100*m.p2, 100*(m.p1-m.p2), 100*tol)
			if math.Abs(m.p1-m.p2) > tol {
				t.Errorf("%s %s share: perf %.2f%%, runtime/pprof %.2f%%: differ by more than %.2f%%", name, m.what, 100*m.p1, 100*m.p2, 100*tol)
			}
		}
	}
	// Not vacuous: the frameless leaf's samples are under its caller.
	if f := find(ft, agreePkg+"agreeHeavy"); f.TotalShare < 0.4 || f.TotalShare < 2*f.SelfShare {
		t.Errorf("agreeHeavy: total share %.1f%%, self %.1f%%: the leaf's samples are not under it", 100*f.TotalShare, 100*f.SelfShare)
	}
}

// TestSamplerForcedPprof: HOTBUDGET_SAMPLER=pprof makes Capture use
// runtime/pprof alone, at the rate the kernel delivered when asked for 1000
// Hz (measured, so the samples stand for the CPU time the function used),
// and the log says so once, with how to allow the fast sampler.
func TestSamplerForcedPprof(t *testing.T) {
	if testchild.Rerun(t, testchild.RuntimeRateLine) {
		return
	}
	t.Setenv(perfassert.SamplerEnv, "pprof")
	ft := &fakeT{name: "TestSamplerForcedPprof"}
	p := perfassert.Capture(ft, func() { spin(50_000) }, perfassert.MinSamples(100), perfassert.MaxDuration(5*time.Second))
	if p == nil {
		t.Fatalf("no profile:\n%s", ft.text())
	}
	rec, _, _ := meta.Get(p)
	if rec.Sampler != "pprof" {
		t.Errorf("record says sampler %q, want pprof", rec.Sampler)
	}
	if rec.RateHz <= 0 || p.Period != int64(time.Second)/int64(rec.RateHz) {
		t.Errorf("rate %d Hz, period %d", rec.RateHz, p.Period)
	}
	logs := strings.Join(ft.logs, "")
	t.Log(logs)
	if !strings.Contains(logs, "sampler: runtime/pprof at ") || !strings.Contains(logs, "when asked for 1000") || !strings.Contains(logs, "HOTBUDGET_SAMPLER=pprof") {
		t.Errorf("the log does not say which sampler ran and why:\n%s", logs)
	}
	// The rate asked for is delivered: the samples stand for the CPU time
	// the capture measured (runs alone in this process).
	if rec.SampledNanos > 0 && rec.UsedNanos > 0 {
		// (A busy machine delivers fewer signals: 70% was seen at load 40
		// on 2 cores.)
		if r := float64(rec.SampledNanos) / float64(rec.UsedNanos); r < 0.6 {
			t.Errorf("samples stand for %.0f%% of the CPU time used at %d Hz: the rate is not delivered", 100*r, rec.RateHz)
		}
	}
	// Said once: a second capture logs no sampler line.
	ft2 := &fakeT{name: "TestSamplerForcedPprof"}
	perfassert.Capture(ft2, func() { spin(50_000) }, perfassert.MinSamples(20), perfassert.MaxDuration(time.Second))
	if l := strings.Join(ft2.logs, ""); strings.Contains(l, "sampler:") {
		t.Errorf("the sampler was named twice:\n%s", l)
	}
	t.Setenv(perfassert.SamplerEnv, "fast")
	if _, err := perfassert.CaptureProfile(func() {}); err == nil || !strings.Contains(err.Error(), "HOTBUDGET_SAMPLER") {
		t.Errorf("a bad HOTBUDGET_SAMPLER: %v", err)
	}
	if _, err := perfassert.CaptureProfile(func() {}, perfassert.Sampler("fast")); err == nil || !strings.Contains(err.Error(), "Sampler") {
		t.Errorf("a bad Sampler: %v", err)
	}
}

// fastSampler is Sampler("perf") where perf events open here, else nil
// (no option): for tests of how captures are made and compared, not of the
// sampler, whose sizes (a few hundred milliseconds, tens of samples asked)
// were chosen for the perf sampler's 2,000 samples a second. Where the
// check finds this host's perf sampler wrong, Capture would use
// runtime/pprof, whose 100-250 samples a second those sizes do not suit
// (HOTBUDGET_SAMPLER_CHECK=biased showed it); an error of attribution does
// not change what these tests check.
func fastSampler() perfassert.CaptureOption {
	if _, err := perfevent.Open(perfevent.Config{CPU: -1, Disabled: true, Pages: 1}); err != nil {
		return nil
	}
	return perfassert.Sampler("perf")
}
