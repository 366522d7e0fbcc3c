package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hotbudget/hotbudget/cmd/hotbudget/internal/gate"
)

// flagLog is a flag's value that logs what it is set to.
type flagLog struct {
	flag.Value
	name string
	log  *[]gate.JudgeFlag
}

func (f flagLog) Set(v string) error {
	*f.log = append(*f.log, gate.JudgeFlag{Flag: f.name, Value: v})
	return f.Value.Set(v)
}

// IsBoolFlag keeps a boolean flag's -name form.
func (f flagLog) IsBoolFlag() bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// typedSettings are the record flags gate.ShardSettings holds in its own fields;
// mergeIgnored those shards may differ in. Neither is in Judge.
var typedSettings = []string{"runs", "count", "bench", "benchtime", "instrument", "instructions", "cycles", "time", "no-allocs"}

// mergeIgnored are the record flags shards may differ in: where and how
// long they ran, not what they measured or how it is judged (and the
// report's, which merge takes itself).
var mergeIgnored = []string{"shard", "out", "keep", "budget", "format", "full", "html", "allocs-html"}

// settingsOf is the settings of a shard recorded with options o from the
// command line args.
func (c *cli) settingsOf(o gate.Config, args []string) (*gate.ShardSettings, error) {
	s := &gate.ShardSettings{Runs: o.Runs, Count: o.Count, Bench: o.Bench, Benchtime: o.Benchtime,
		Instructions: o.Instructions, Cycles: o.Cycles, NoAllocs: o.NoAllocs, Packages: o.Packages}
	rc := c.recordFlags()
	var given []gate.JudgeFlag
	rc.fs.VisitAll(func(f *flag.Flag) { f.Value = flagLog{f.Value, f.Name, &given} })
	if _, err := parseArgs(rc.fs.FlagSet, args); err != nil {
		return nil, err
	}
	for _, f := range given {
		if !slices.Contains(typedSettings, f.Flag) && !slices.Contains(mergeIgnored, f.Flag) {
			s.Judge = append(s.Judge, f)
		}
	}
	slices.SortStableFunc(s.Judge, func(a, b gate.JudgeFlag) int { return strings.Compare(a.Flag, b.Flag) })
	return s, nil
}

// shardRecordCmd is the command line that judges as the shard's settings
// s say: record's flags set from them (none parsed from text but each
// flag's value), for shard k of n recorded at the revisions base and head.
func (c *cli) shardRecordCmd(s *gate.ShardSettings, base, head string, k, n int) (*recordCmd, error) {
	rc := c.recordFlags()
	fs := rc.fs.FlagSet
	set := func(name, v string) error {
		if err := fs.Set(name, v); err != nil {
			return fmt.Errorf("%s %q: %w", name, v, err)
		}
		return nil
	}
	for _, f := range s.Judge {
		if fs.Lookup(f.Flag) == nil || slices.Contains(typedSettings, f.Flag) || slices.Contains(mergeIgnored, f.Flag) {
			return nil, fmt.Errorf("judge: %q is not a setting of the judgement", f.Flag)
		}
		if err := set(f.Flag, f.Value); err != nil {
			return nil, fmt.Errorf("judge: %w", err)
		}
	}
	instrument := "time"
	if s.Instructions {
		instrument = "instructions"
	}
	if s.Cycles {
		instrument = "cycles"
	}
	for name, v := range map[string]string{"runs": strconv.Itoa(s.Runs), "count": strconv.Itoa(s.Count), "bench": s.Bench,
		"benchtime": s.Benchtime, "instrument": instrument, "no-allocs": strconv.FormatBool(s.NoAllocs),
		"shard": fmt.Sprintf("%d/%d", k, n), "out": "."} {
		if instrument != "time" && (name == "runs" || name == "count") {
			continue // time's flags, refused with another instrument
		}
		if err := set(name, v); err != nil {
			return nil, err
		}
	}
	if err := rc.finish(append([]string{base, head}, s.Packages...)); err != nil {
		return nil, err
	}
	return rc, nil
}
