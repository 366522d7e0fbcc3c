package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
)

// TestRecordHistoryFlags: record --base-from-history refuses the flags a
// time base from the history cannot honour (the engine's refusals of the
// records themselves are gate's TestTimeHistoryRefusals).
func TestRecordHistoryFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--time", "--base-from-history", "--benchtime", "1s", "a", "b"}, "drop --benchtime"},
		{[]string{"--time", "--base-from-history", "--metric", "total", "a", "b"}, "--metric total needs the base measured"},
		{[]string{"--time", "--base-from-history", "--key", "name+file", "a", "b"}, "--key name+file needs the base measured"},
		{[]string{"--time", "--base-from-history", "--history-max-age", "-1h", "a", "b"}, "must not be negative"},
		{[]string{"--time", "--base-from-history", "--benchtime", "100x", "--runs", "3", "a", "b"}, ""},
	} {
		rc := (&cli{}).recordFlags()
		if err := rc.fs.FlagSet.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := rc.finish(rc.fs.FlagSet.Args())
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
		if c.want == "" && (!rc.o.RunsSet || rc.o.CountSet) {
			t.Errorf("%q: --runs given %v, --count given %v", c.args, rc.o.RunsSet, rc.o.CountSet)
		}
	}
}

// TestRecordCyclesFlags: --cycles, --instrument cycles and
// --instrument=cycles choose cycles (instructions with the cache
// simulation); --runs is time's and refused beside them.
func TestRecordCyclesFlags(t *testing.T) {
	for _, args := range [][]string{{"--cycles"}, {"--instrument", "cycles"}, {"--instrument=cycles"}} {
		rc := (&cli{}).recordFlags()
		pos, err := parseArgs(rc.fs.FlagSet, append(args, "main", "HEAD"))
		if err == nil {
			err = rc.finish(pos)
		}
		o := rc.o
		if err != nil || o.Instrument != "cycles" || !o.Cycles || !o.Instructions ||
			!strings.HasPrefix(o.Why, "estimating cycles") {
			t.Errorf("%q: %v, instrument %q (%q), cycles %v, instructions %v", args, err, o.Instrument, o.Why, o.Cycles, o.Instructions)
		}
	}
	rc := (&cli{}).recordFlags()
	pos, err := parseArgs(rc.fs.FlagSet, []string{"--cycles", "--runs", "3", "main", "HEAD"})
	if err == nil {
		err = rc.finish(pos)
	}
	if err == nil || !strings.Contains(err.Error(), "--runs is time's") {
		t.Errorf("--cycles --runs 3: %v, want refused as time's", err)
	}
}

// A shard's settings hold what record was given that decides the
// measurement and the judgement, typed, and merge's flags set from them
// are those record parsed: a repeated flag's values in order, the
// measurement's as record completed them, a shard's own flags left out.
func TestShardSettingsRoundTrip(t *testing.T) {
	args := []string{"--rename", "a.f=a.g", "--shard", "2/3", "--out", "x", "--budget", "5m", "--alpha", "0.01",
		"--rename", "b.f=b.g", "--instructions", "main", "HEAD", "./a", "./b"}
	c := &cli{}
	rc := c.recordFlags()
	pos, err := parseArgs(rc.fs.FlagSet, args)
	if err == nil {
		err = rc.finish(pos)
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.settingsOf(rc.o, args)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"runs":5,"count":1,"bench":".","benchtime":"4ms","instructions":true,"no_allocs":false,"packages":["./a","./b"],` +
		`"judge":[{"flag":"alpha","value":"0.01"},{"flag":"rename","value":"a.f=a.g"},{"flag":"rename","value":"b.f=b.g"}]}`
	if s.Text() != want {
		t.Errorf("settings %s\nwant     %s", s.Text(), want)
	}
	back, err := c.shardRecordCmd(s, "main", "HEAD", 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if back.o.Runs != 5 || !back.o.Instructions || back.o.Why != "counting instructions (callgrind): chosen by --instrument instructions" || back.o.Benchtime != "4ms" || back.o.Shard != (gate.ShardSpec{K: 2, N: 3}) ||
		!slices.Equal(back.o.Packages, []string{"./a", "./b"}) || back.d.alpha != 0.01 || !slices.Equal(back.d.renames, rc.d.renames) {
		t.Errorf("merge's flags from the settings: %+v, renames %q, alpha %v", back.o, back.d.renames, back.d.alpha)
	}
	// Cycles: merge counts them as the shards did, with the cache
	// simulation, not as instructions alone.
	args = []string{"--shard", "1/2", "--out", "x", "--cycles", "main", "HEAD"}
	rc = c.recordFlags()
	if pos, err = parseArgs(rc.fs.FlagSet, args); err == nil {
		err = rc.finish(pos)
	}
	if err != nil {
		t.Fatal(err)
	}
	if s, err = c.settingsOf(rc.o, args); err != nil || !strings.Contains(s.Text(), `"instructions":true,"cycles":true`) {
		t.Fatalf("cycles' settings %s: %v", s.Text(), err)
	}
	if back, err = c.shardRecordCmd(s, "main", "HEAD", 1, 2); err != nil || back.o.Instrument != "cycles" || !back.o.Cycles || !back.o.Instructions {
		t.Errorf("merge's flags from cycles' settings: %v, %+v", err, back.o)
	}
	// Time, chosen by its flag (--runs): merge's flags time it too.
	args = []string{"--shard", "1/2", "--out", "x", "--runs", "3", "main", "HEAD"}
	rc = c.recordFlags()
	if pos, err = parseArgs(rc.fs.FlagSet, args); err == nil {
		err = rc.finish(pos)
	}
	if err != nil {
		t.Fatal(err)
	}
	if s, err = c.settingsOf(rc.o, args); err != nil {
		t.Fatal(err)
	}
	if back, err = c.shardRecordCmd(s, "main", "HEAD", 1, 2); err != nil {
		t.Fatal(err)
	}
	if back.o.Instrument != "time" || back.o.Runs != 3 || s.Instructions {
		t.Errorf("time's settings %s: merge's flags %+v", s.Text(), back.o)
	}
}
