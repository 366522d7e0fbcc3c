// Package membudget bounds the memory that a profile takes once parsed, in
// proportion to its decompressed input and in total.
//
// A loader charges a Meter for what it builds (a string, a location, a
// line of a location, a sample, a location id of a sample, a node) as the
// input arrives, and the Meter refuses, with an error wrapping ErrTooLarge
// that says what there is too much of, as soon as the estimated memory
// exceeds Ratio bytes per byte of input read so far (plus an Allowance for
// the fixed costs of a small profile), or Max in all. The charges are
// estimates of what the structures cost on a 64-bit machine, including
// the spare capacity that growing slices leave, so that what a charge
// admits stays within a small multiple of the input, and the whole parse
// within about Max: a profile of millions of empty strings or locations,
// each a few bytes of input, is refused from its first megabytes instead
// of being read in full.
package membudget

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// ErrTooLarge is wrapped by the errors of input larger than a limit, on
// disk, after decompression or once parsed.
var ErrTooLarge = errors.New("input too large")

// Ratio is how many bytes of memory a parsed profile may take per byte of
// its decompressed input, beyond Allowance. Ordinary profiles take 7 to 14
// in pprof's parser (structures of 64 to 128 bytes per location, function
// or sample, a map per labelled sample, 16 bytes per location id of a
// sample: see TestChargesFollowAllocation); what takes more is made of
// elements far smaller than any profiler writes.
const Ratio = 24

// Allowance is the memory every profile may take whatever its size.
const Allowance = 64 << 20

// Kind names what a charge is for, in errors.
type Kind int

// Kinds of charges.
const (
	String Kind = iota
	Location
	Line
	Function
	Mapping
	Sample
	LocationID
	Value
	Label
	Other
	Node
	Frame
	Event
	numKinds
)

var kindNames = [numKinds]string{"strings", "locations", "lines of locations", "functions", "mappings", "samples",
	"location ids of samples", "sample values", "labels", "other fields", "nodes", "stack frames", "events"}

// Charges, in bytes, of pprof's parsed structures (profile.Profile on a
// 64-bit machine), with a half again for the spare capacity of the slices
// that hold them.
const (
	CostString     = 24  // + the bytes: a string header in the string table
	CostLocation   = 104 // *Location in Profile.Location, Location (64 bytes), its Line slice
	CostLine       = 48  // a Line (32 bytes)
	CostFunction   = 120 // *Function, Function (96 bytes)
	CostMapping    = 136 // *Mapping, Mapping (112 bytes)
	CostSample     = 144 // *Sample, Sample (128 bytes)
	CostLocationID = 16  // Sample.locationIDX and Sample.Location
	CostValue      = 12  // an int64 in Sample.Value
	CostLabel      = 96  // a label (32 bytes) and its entry in the sample's label map
	CostLabelMap   = 336 // the label map of a sample that has labels
	CostOther      = 48  // a ValueType, a comment
)

// ForLimit returns the Meter of a parse whose input may be limit bytes
// once decompressed (math.MaxInt64 or less than 1: no limit, and a nil
// Meter): the memory charged may be half the limit (or Allowance, if that
// is more, as a small profile may always take), so that with the
// garbage collector's headroom (at GOGC=100 the heap grows to twice what
// is live before a collection) the process stays within about the limit.
func ForLimit(limit int64) *Meter {
	if limit <= 0 || limit == math.MaxInt64 {
		return nil
	}
	return &Meter{Max: max(limit/2, Allowance)}
}

// A Meter adds up the estimated memory of a parse and refuses what
// exceeds its budget. The zero Meter has no total limit (Max 0).
type Meter struct {
	// Max bounds the memory charged (besides the input, which has its own
	// limit); 0 or less: no bound but the Ratio.
	Max int64
	// Limit says what Max is, in errors: "half the limit on input" when
	// empty (ForLimit's Max).
	Limit string
	in    int64
	total int64
	// expanded is the part of total that Expand charged: held to Max,
	// not to the Ratio.
	expanded int64
	by       [numKinds]struct{ n, cost int64 }
	err      error
}

// Read records n more bytes of input and checks the budget.
func (m *Meter) Read(n int) error {
	m.in += int64(n)
	return m.check()
}

// Charge records n elements of kind k costing cost bytes in all. It
// returns the error of an exceeded budget, as Err does; a caller that
// charges often may instead check Err now and then.
func (m *Meter) Charge(k Kind, n, cost int64) error {
	m.by[k].n += n
	m.by[k].cost += cost
	m.total += cost
	return m.check()
}

// Expand is Charge for what a parse derives from its input rather than
// reads from it, legitimately many times the input's size: the stacks a
// callgrind reader rebuilds from a call graph (a 1.3 MiB dump of a Go
// test binary takes 1.7 million stack frames, 92 MiB). It is held to Max
// and not to the Ratio; the reader bounds it by a Max of its own.
func (m *Meter) Expand(k Kind, n, cost int64) error {
	m.expanded += cost
	return m.Charge(k, n, cost)
}

// Add is Charge without the check: for loops that call Err after.
func (m *Meter) Add(k Kind, n, cost int64) {
	m.by[k].n += n
	m.by[k].cost += cost
	m.total += cost
}

// Count returns how many elements of kind k were charged.
func (m *Meter) Count(k Kind) int64 { return m.by[k].n }

// Total returns the memory charged so far and the input read.
func (m *Meter) Total() (charged, input int64) { return m.total, m.in }

// Err returns the error of an exceeded budget, or nil.
func (m *Meter) Err() error { return m.check() }

func (m *Meter) check() error {
	if m.err != nil {
		return m.err
	}
	over := ""
	switch {
	case m.total-m.expanded > Ratio*m.in+Allowance:
		over = fmt.Sprintf("more than %d times the %s of input read so far", Ratio, size(m.in))
	case m.Max > 0 && m.total > m.Max:
		what := m.Limit
		if what == "" {
			what = "half the limit on input"
		}
		over = fmt.Sprintf("more than the budget of %s (%s)", size(m.Max), what)
	default:
		return nil
	}
	// Name the kind that costs the most.
	k := Kind(0)
	for i := range m.by {
		if m.by[i].cost > m.by[k].cost {
			k = Kind(i)
		}
	}
	m.err = fmt.Errorf("%w: once parsed it would take about %s of memory, %s (of which %d %s: %s)",
		ErrTooLarge, size(m.total), over, m.by[k].n, kindNames[k], size(m.by[k].cost))
	return m.err
}

// size writes n bytes for people: "1.5 GiB", "96 MiB", "812 bytes".
func size(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n >= 1<<u.shift {
			s := fmt.Sprintf("%.1f", float64(n)/float64(int64(1)<<u.shift))
			return strings.TrimSuffix(s, ".0") + " " + u.name
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// StringCost is the charge of a string of n bytes in pprof's string table
// or in an interned name: its header and its bytes rounded up to a word.
func StringCost(n int64) int64 {
	if n > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return CostString + (n+7)&^7
}

// SizeString writes n bytes for people: "1 GiB (1073741824 bytes)".
func SizeString(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s (%d bytes)", n>>u.shift, u.name, n)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// DefaultInput is how much input, after decompression, the loaders take
// in unless InputEnv or loaders.WithMaxBytes says otherwise: 1 GiB.
const DefaultInput int64 = 1 << 30

// InputEnv names the environment variable that sets the default limit on
// decompressed input: a number of bytes, optionally with a suffix KiB,
// MiB, GiB or TiB, or 0 for no limit.
const InputEnv = "HOTBUDGET_MAX_BYTES"

// InputLimit is the limit on decompressed input in effect: n when not 0
// (negative: none), else InputEnv's, else DefaultInput; math.MaxInt64 when
// there is none. The error names a malformed InputEnv.
func InputLimit(n int64) (int64, error) {
	if n == 0 {
		n = DefaultInput
		if v := os.Getenv(InputEnv); v != "" {
			var err error
			if n, err = ParseSize(v); err != nil {
				return 0, fmt.Errorf("%s=%q: %v", InputEnv, v, err)
			}
			if n == 0 {
				n = -1
			}
		}
	}
	if n < 0 {
		return math.MaxInt64, nil
	}
	return n, nil
}

// ParseSize reads "1073741824", "512MiB" or "2GiB".
func ParseSize(s string) (int64, error) {
	num, mult := s, int64(1)
	for i, suf := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if v, ok := strings.CutSuffix(s, suf); ok {
			num, mult = v, int64(1)<<(10*(i+1))
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, errors.New("want a number of bytes, such as 2147483648 or 2GiB (0: no limit)")
	}
	return n * mult, nil
}
