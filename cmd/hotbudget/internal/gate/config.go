package gate

import (
	"regexp"
	"time"
)

// Config is what record measures and how: the command's flags bound to
// typed values (cmd/hotbudget binds them; merge rebuilds them from a
// shard's settings).
type Config struct {
	Runs, Count int
	Bench       string
	Benchtime   string
	FixedIters  int64         // --benchtime Nx
	Target      time.Duration // --benchtime DURATION
	Out         string
	HTML        string // also write the functions' HTML report here
	AllocsHTML  string // and the allocations' here
	Keep        bool
	Packages    []string
	Procs       int // -test.cpu: the GOMAXPROCS suffix of benchmark names
	Budget      time.Duration
	Gate        *regexp.Regexp // --gate or --module: the functions whose allocations are judged (nil: the module's)
	NoAllocs    bool           // --no-allocs
	// instrument is what record measures: "instructions" (counted under
	// callgrind) or "time" (chooseInstrument); instructions says it is
	// "instructions", why is the report's first line: which and why.
	Instrument   string
	Instructions bool
	Why          string
	Cycles       bool      // --instrument cycles (recordcycles.go): instructions with cache simulation
	Full         bool      // --full: every table in the text report
	Shard        ShardSpec // --shard K/N: record the K-th of N parts, unjudged (zero: all, judged)

	// baseFromHistory takes the base's counts from its record in the
	// history instead of measuring it (--base-from-history), read from
	// the notes ref historyRef.
	BaseFromHistory bool
	HistoryRef      string
	// historyMaxAge is the oldest a time record --base-from-history
	// takes (0: any).
	HistoryMaxAge time.Duration
	// runsSet and countSet say --runs and --count were given: with a
	// time base from the history they must be the stored record's.
	RunsSet, CountSet bool
}
