package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// shardSettings are what a shard was recorded with that decides what was
// measured and how merge judges it, typed (shard.json v2's "settings"):
// every shard of a record holds the same.
type shardSettings struct {
	Runs         int      `json:"runs"`      // --runs
	Count        int      `json:"count"`     // --count
	Bench        string   `json:"bench"`     // --bench
	Benchtime    string   `json:"benchtime"` // --benchtime, as record took it
	Instructions bool     `json:"instructions"`
	Cycles       bool     `json:"cycles,omitempty"` // counted with the cache simulation (--instrument cycles)
	NoAllocs     bool     `json:"no_allocs"`
	Packages     []string `json:"packages"`
	// Judge are the judgement's flags given to record (--alpha, --gate,
	// --rename...), each as given, sorted by name (a repeated flag's in
	// the order given): merge sets each of them, as if given to it.
	Judge []judgeFlag `json:"judge,omitempty"`
}

// judgeFlag is a judgement's flag given to record: --Flag=Value.
type judgeFlag struct {
	Flag  string `json:"flag"`
	Value string `json:"value"`
}

// flagLog is a flag's value that logs what it is set to.
type flagLog struct {
	flag.Value
	name string
	log  *[]judgeFlag
}

func (f flagLog) Set(v string) error {
	*f.log = append(*f.log, judgeFlag{f.name, v})
	return f.Value.Set(v)
}

// IsBoolFlag keeps a boolean flag's -name form.
func (f flagLog) IsBoolFlag() bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// typedSettings are the record flags shardSettings holds in its own fields;
// mergeIgnored those shards may differ in. Neither is in Judge.
var typedSettings = []string{"runs", "count", "bench", "benchtime", "instrument", "instructions", "cycles", "time", "no-allocs"}

// mergeIgnored are the record flags shards may differ in: where and how
// long they ran, not what they measured or how it is judged (and the
// report's, which merge takes itself).
var mergeIgnored = []string{"shard", "out", "keep", "budget", "format", "full", "html", "allocs-html"}

// settingsOf is the settings of a shard recorded with options o from the
// command line args.
func (c *cli) settingsOf(o recordOpts, args []string) (*shardSettings, error) {
	s := &shardSettings{Runs: o.runs, Count: o.count, Bench: o.bench, Benchtime: o.benchtime,
		Instructions: o.instructions, Cycles: o.cycles, NoAllocs: o.noAllocs, Packages: o.pkgs}
	rc := c.recordFlags()
	var given []judgeFlag
	rc.fs.VisitAll(func(f *flag.Flag) { f.Value = flagLog{f.Value, f.Name, &given} })
	if _, err := parseArgs(rc.fs.FlagSet, args); err != nil {
		return nil, err
	}
	for _, f := range given {
		if !slices.Contains(typedSettings, f.Flag) && !slices.Contains(mergeIgnored, f.Flag) {
			s.Judge = append(s.Judge, f)
		}
	}
	slices.SortStableFunc(s.Judge, func(a, b judgeFlag) int { return strings.Compare(a.Flag, b.Flag) })
	return s, nil
}

// recordCmd is the command line that judges as the shard's settings say:
// record's flags set from them (none parsed from text but each flag's
// value), for shard k of n recorded at the revisions base and head.
func (s *shardSettings) recordCmd(c *cli, base, head string, k, n int) (*recordCmd, error) {
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

// text is the settings as JSON, the same for equal settings: what the
// shards of a record must agree on.
func (s *shardSettings) text() string {
	b, _ := json.Marshal(s) // of strings, numbers and a map: no error
	return string(b)
}
