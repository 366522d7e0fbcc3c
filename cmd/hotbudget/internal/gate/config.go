package gate

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/hotbudget/hotbudget/internal/valgrind"
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

// ChooseInstrument decides what record measures: name, the instrument a
// flag chose ("" none; given is how that flag was written), else time
// when a flag only time uses was given (timeOnly), else instructions
// where valgrind runs (valgrind.Find), else time. why is the report's
// first line: which instrument and why.
func ChooseInstrument(name, given string, timeOnly []string) (instrument, why string, err error) {
	switch {
	case name == "time":
		instrument, why = "time", "timing: chosen by "+given
	case name != "":
		if len(timeOnly) > 0 {
			return "", "", fmt.Errorf("%s is time's: %s counts each benchmark at N and 2N iterations, exactly, without runs to repeat (drop %s, or give --instrument time)", strings.Join(timeOnly, ", "), given, strings.Join(timeOnly, ", "))
		}
		instrument, why = name, "counting instructions (callgrind): chosen by "+given
		if name == "cycles" {
			why = "estimating cycles (callgrind's cache simulation, a fixed CI runner's caches): chosen by " + given
		}
	case len(timeOnly) > 0:
		instrument, why = "time", fmt.Sprintf("timing: %s is time's (counting instructions, exact, is the default where valgrind runs)", strings.Join(timeOnly, ", "))
	default:
		if _, err := valgrind.Find(); err != nil {
			reason := err.Error()
			if errors.Is(err, valgrind.ErrMissing) {
				reason = "valgrind is not installed (sudo apt-get install valgrind)"
			}
			instrument, why = "time", "timing: "+reason+"; counts would be exact"
			break
		}
		v := valgrind.Version()
		if v == "" {
			v = "valgrind"
		}
		instrument, why = "instructions", fmt.Sprintf("counting instructions (callgrind, %s): exact, the default where valgrind runs (--instrument cycles for cache effects, time for I/O, system calls, the collector)", v)
	}
	return instrument, why, nil
}
