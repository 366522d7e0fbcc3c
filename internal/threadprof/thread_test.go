package threadprof

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hotbudget/hotbudget/internal/perfevent"
)

var sink uint64

//go:noinline
func spinA(n int) {
	x := sink
	for range n {
		x = x*6364136223846793005 + 1
	}
	sink = x
}

//go:noinline
func spinB(n int) {
	x := sink
	for range n {
		x = x*2862933555777941757 + 3037000493
	}
	sink = x
}

// TestRecord samples a thread that spends about three times as long in
// spinA as in spinB and checks the profile: samples at the period's rate
// of the thread's CPU time, both functions named under the caller, their
// shares about 3:1, and each sample's value its period.
func TestRecord(t *testing.T) {
	res, err := Record(0, func() {
		deadline := time.Now().Add(300 * time.Millisecond)
		for time.Now().Before(deadline) {
			spinA(300_000)
			spinB(100_000)
		}
	})
	if errors.Is(err, perfevent.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	p := res.Profile
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	var n, a, b int64
	for _, s := range p.Sample {
		n += s.Value[0]
		if s.Value[1] != perfevent.DefaultPeriod.Nanoseconds() {
			t.Fatalf("sample value %d ns, want the period %d", s.Value[1], perfevent.DefaultPeriod.Nanoseconds())
		}
		leaf := s.Location[0].Line[0].Function.Name
		var underRecord bool
		for _, l := range s.Location {
			for _, ln := range l.Line {
				underRecord = underRecord || strings.HasSuffix(ln.Function.Name, "TestRecord.func1")
			}
		}
		switch {
		case strings.HasSuffix(leaf, ".spinA"):
			a++
		case strings.HasSuffix(leaf, ".spinB"):
			b++
		default:
			continue
		}
		if !underRecord {
			t.Fatalf("a sample of %s lacks its caller: %v", leaf, s.Location)
		}
	}
	want := res.ThreadCPU.Seconds() / perfevent.DefaultPeriod.Seconds()
	if float64(n) < 0.5*want || float64(n) > 1.1*want {
		t.Errorf("%d samples in %v of thread CPU time, want about %.0f", n, res.ThreadCPU, want)
	}
	if a+b < n*9/10 {
		t.Errorf("spinA %d + spinB %d of %d samples", a, b, n)
	}
	if r := float64(a) / float64(max(b, 1)); r < 2 || r > 4.5 {
		t.Errorf("spinA/spinB = %d/%d = %.2f, want about 3", a, b, r)
	}
}
