package budget

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/meta"
)

// withWork is busy.pb.gz recording that it did work units of unit.
func withWork(t *testing.T, unit meta.WorkUnit, work float64) *profile.Profile {
	t.Helper()
	p := busy(t)
	meta.Set(p, meta.Record{Name: "busy", WorkUnit: unit, Runs: []meta.Run{{Work: work}}})
	return p
}

// TestCheckPerOp: per-op limits divide the time of all runs by the work of
// all runs. In busy.pb.gz main.parseRecords has 150ms self and 990ms total
// (go tool pprof -top); over 1000 ops that is 150µs and 990µs an op.
func TestCheckPerOp(t *testing.T) {
	b := mustParse(t, "b.yaml", `version: 1
rules:
  - function: main.parseRecords
    max_self_per_op: 200us
    max_total_per_op: 900µs
`)
	res, err := Check(b, []*profile.Profile{withWork(t, "op", 1000)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Checks) != 2 {
		t.Fatalf("%d checks: %+v", len(res.Checks), res.Checks)
	}
	self, total := res.Checks[0], res.Checks[1]
	if self.Check != "max_self_per_op" || !self.Pass || abs(self.Got-150e3) > 1e-6 || self.Unit != "ns/op" || self.Limit != 200e3 {
		t.Errorf("self per op: %+v, want 150µs passing", self)
	}
	if total.Check != "max_total_per_op" || total.Pass || abs(total.Got-990e3) > 1e-6 {
		t.Errorf("total per op: %+v, want 990µs failing", total)
	}
	if want := "main.parseRecords total time 990us per op (66.89% of 1.48s total over 1000 ops, 99 samples), want at most 900us"; total.Message != want {
		t.Errorf("message %q\nwant    %q", total.Message, want)
	}
	var text bytes.Buffer
	if err := res.writeText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "max_total_per_op") || !strings.Contains(text.String(), "990us per op") {
		t.Errorf("text report:\n%s", text.String())
	}

	// Two runs: 150ms over 1000 ops and nothing over 500 ops is 100µs an op
	// (time of all runs over work of all runs), whatever each run lasted.
	empty := withWork(t, "op", 500)
	empty.Sample = nil
	res, err = Check(b, []*profile.Profile{withWork(t, "op", 1000), empty}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Checks[0]; abs(c.Got-100e3) > 1e-6 || !strings.Contains(c.Message, "100us per op (10.14% of 1.48s total over 1500 ops in 2 profiles, 15 samples)") {
		t.Errorf("two runs: %+v, want 100µs per op over 1500 ops", c)
	}
	// The unit of work is the record's word.
	res, err = Check(b, []*profile.Profile{withWork(t, "iteration", 3)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Checks[0]; abs(c.Got-50e6) > 1e-3 || !strings.Contains(c.Message, "self time 50ms per iteration (10.14% of 1.48s total over 3 iterations, 15 samples), want at most 200us") {
		t.Errorf("per iteration: %+v", c)
	}
	// A capture written by perfassert.Capture before the typed record
	// existed says its iterations in a comment of its own.
	p := busy(t)
	p.Comments = append(p.Comments, "hotbudget iterations: 1500")
	res, err = Check(b, []*profile.Profile{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Checks[0]; abs(c.Got-100e3) > 1e-6 || !c.Pass {
		t.Errorf("Capture's iterations comment: %+v, want 100µs per iteration", c)
	}
}

func TestCheckPerOpErrors(t *testing.T) {
	b := mustParse(t, "b.yaml", "version: 1\nrules:\n  - function: main.parseRecords\n    max_self: 1s\n  - function: main.parseRecords\n    max_self_per_op: 1ms\n")
	for _, c := range []struct {
		name     string
		profiles []*profile.Profile
		want     string
	}{
		{"no record", []*profile.Profile{busy(t)}, "b.yaml:6: perfassert: time per unit of work (PerIteration, per-op budget limits) needs the work a profile records, and the profile records none: perfassert.Capture (iterations) and hotbudget record (benchmark ops) write it"},
		{"no work", []*profile.Profile{withWork(t, "op", 1000), withWork(t, "op", 0)}, "b.yaml:6: perfassert: time per unit of work (PerIteration, per-op budget limits) needs the work a profile records, and profile 2 (busy) records none"},
		{"two units", []*profile.Profile{withWork(t, "op", 1000), withWork(t, "iteration", 10)}, "needs one unit, and profile 1 (busy) counts its work in ops, profile 2 (busy) in iterations"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Check(b, c.profiles, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant %q", err, c.want)
			}
		})
	}
	// Limits that need no work count still work on such profiles.
	b = mustParse(t, "b.yaml", "version: 1\nrules:\n  - function: main.parseRecords\n    max_self: 1s\n")
	if _, err := Check(b, []*profile.Profile{busy(t)}, nil); err != nil {
		t.Errorf("max_self without a work count: %v", err)
	}
	for _, src := range []string{"max_self_per_op: 20", "max_total_per_op: 20%", "max_self_per_op: -1ms"} {
		if _, err := Parse("b", []byte("version: 1\nrules:\n  - function: f\n    "+src+"\n")); err == nil || !strings.Contains(err.Error(), "b:4: max_") {
			t.Errorf("%s: error %v", src, err)
		}
	}
}
