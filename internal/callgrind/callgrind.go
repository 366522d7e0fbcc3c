// Package callgrind reads the output files of valgrind's callgrind tool
// (callgrind.out.<pid>), in the Callgrind Format of valgrind's
// documentation, "Callgrind Format Specification", version 1: the header
// (version, creator, pid, thread, part, cmd, desc, positions, events,
// summary, totals), name compression ("fn=(12) name", "fn=(12)"), the
// position specifications ob=, fl=, fi=, fe=, fn=, cob=, cfi=, cfl=, cfn=,
// calls= lines with the inclusive cost of the call on the cost line after
// them, jump=/jcnd= lines (skipped), relative subpositions ("+3", "-2",
// "*") of --dump-instr=yes and compressed files, and files of several parts
// (--combine-dumps=yes, --separate-threads=yes), whose costs add up.
//
// Self and total per function equal what `callgrind_annotate` and
// `callgrind_annotate --inclusive=yes` print, for every function that is on
// no call cycle; see Parse for the model and the one exception
// (recursion).
package callgrind

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// MaxLineBytes bounds the length of one line.
const MaxLineBytes = 16 << 20

// maxMemory bounds the memory a parse charges, whatever the caller's
// meter allows (none, or a large HOTBUDGET_MAX_BYTES): with the
// collector's headroom and the input's buffers the reader stays within
// 1 GiB (TestMemoryBounded measures it).
const maxMemory = 320 << 20

// costSlot is the charge of an entry of a map from a key to an index
// (key, value, the map's overhead and spare room), beside the slice of
// costs the index points into.
const costSlot = 64

// Format is the name of the format, as the loaders name it.
const Format = "callgrind"

// EventType is the sample type an event of the events: line becomes: Ir
// is "instructions", every other event its name in lower case ("Dr" is
// "dr", "I1mr" "i1mr"). The unit is always "count".
func EventType(event string) string {
	if event == "Ir" {
		return "instructions"
	}
	return strings.ToLower(event)
}

// Looks reports whether head, the first bytes of a file, is callgrind (or
// cachegrind) output: the line "# callgrind format", or header lines
// ("key: value", blank lines and '#' comments) of which one is
// "creator: callgrind..." or "events: ...", before any other line.
func Looks(head []byte) bool {
	b := bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	for n := 0; len(b) > 0 && n < 64; n++ {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		line = bytes.TrimRight(line, "\r")
		if bytes.HasPrefix(line, []byte("# callgrind format")) {
			return true
		}
		if len(bytes.TrimSpace(line)) == 0 || line[0] == '#' {
			continue
		}
		key, _, ok := bytes.Cut(line, []byte(":"))
		if !ok || !headerKeys[string(key)] {
			return false
		}
		if string(key) == "events" || string(key) == "creator" && bytes.HasPrefix(bytes.TrimSpace(line[len(key)+1:]), []byte("callgrind")) {
			return true
		}
	}
	return false
}

// headerKeys are the keys of header lines ("key: value").
var headerKeys = map[string]bool{
	"version": true, "creator": true, "pid": true, "thread": true, "part": true, "cmd": true,
	"desc": true, "positions": true, "events": true, "event": true, "summary": true, "totals": true,
}

// Name compression tables, shared as callgrind_annotate shares them:
// files (fl, fi, fe, cfi, cfl, jfi), functions (fn, cfn, jfn), objects
// (ob, cob).
const (
	tabFile = iota
	tabFn
	tabObj
	numTabs
)

// node is a function as callgrind_annotate keys it: file and name.
type node struct {
	file, fn string
	obj      string // the object of its first fn= (or cob=) line
	// Of ParseByAddress's nodes of functions its symbolizer named: the
	// innermost function's name (fn is the chain's key), the name of the
	// compiled function the code is in, and the node of the chain one
	// frame shorter (-1: none).
	name, phys string
	parent     int32
}

// display is the name of the function of node n.
func (n node) display() string {
	if n.name != "" {
		return n.name
	}
	return n.fn
}

type arcKey struct{ from, to int32 }

// group is the costs of one thread (all parts of a file without thread:
// lines are one group): self cost per node and event, and the inclusive
// cost of the calls per arc.
type group struct {
	thread string
	// The self cost of the nodes that have some in this group: the
	// index of node n is selfIdx[arcKey{n, n}], its costs
	// selfC[index*nev:], so that a group holds what its cost lines name,
	// not a row for every node of the file.
	selfIdx map[arcKey]int32
	selfOf  []arcKey
	selfC   []int64
	arcs    map[arcKey]int32
	arcOf   []arcKey
	arcC    []int64 // [arc*nev+event]
	// inline holds the cost of code a function's block marks with fi=
	// or fe= as another file: the cost of (file, fn) Q within the block
	// of the function P whose fn= line opened it, by (P, Q).
	inline map[arcKey]int32
	inlOf  []arcKey
	inlC   []int64
}

type parser struct {
	meter *membudget.Meter // the caller's, or nil
	own   *membudget.Meter // maxMemory's
	warn  func(string, ...any)
	line  int

	events []string // of the first events: line
	nev    int
	cols   []int // of the current part: column -> event
	npos   int
	pos    []int64

	names  [numTabs]map[int64]string
	nodes  []node
	nodeOf map[[2]string]int32
	intern map[string]string

	groups  []*group
	groupOf map[string]*group
	g       *group

	obj, file, fn string
	cur, main     int32 // current (file, fn) node and the node of the fn= line; -1: none
	cfile         string
	hasCfile      bool
	cobj          string
	callee        int32
	pending       bool // a calls= line waits for its cost line
	callsLine     int
	vals          []int64 // the current cost line's costs, by column
	costLines     int
	tok           [][]byte // the fields of the current line

	pid, cmd, creator string
	partSelf          []int64 // self cost of the current part, for totals:
	parts             int

	addr *addrMode // ParseByAddress's state; nil for Parse
}

// Parse reads a callgrind output file into a profile with one sample type
// per event ("instructions" for Ir: see EventType), unit "count", marked
// exact (the counts are not sampled); "instructions" is the default type
// when Ir was recorded, else the first event.
//
// Functions are keyed as callgrind_annotate keys them, by file and name:
// fn= names the function, the file is the last of fl=, fi= and fe= (so
// the code a function inlined from a header is a function of its own, in
// that header's file, as callgrind_annotate prints it); the object (ob=)
// is the location's mapping. Names are kept as callgrind wrote them, with
// the "'2" of a recursion level that --separate-recs made a function of
// its own.
//
// Self cost is the cost lines' cost, charged to the current function.
// Total cost is built from the call graph: a call's inclusive cost (the
// cost line after calls=) is a flow along the arc from caller to callee,
// and the samples are a decomposition of that flow into paths from
// functions nobody calls to the function that spent the cost, each path a
// stack of callers. A function then is on the stacks of exactly the cost
// its callers' calls to it carry, and its total equals what
// callgrind_annotate --inclusive=yes prints: the inclusive cost of all
// calls to it, or, for a function nobody calls, its self cost plus the
// cost of its calls. The code of a function inlined from another file is
// on the function's stacks as a callee (so that the function's total holds
// it, as the calls to the function do).
//
// Which caller's cost goes down which of a function's calls is not in the
// file (callgrind records arcs, not stacks): the decomposition cuts the
// incoming cost in the order of the callers and the outgoing cost in the
// order of the calls, so stacks longer than one call are a
// reconstruction, while every function's self and total are exact.
//
// Recursion is where no profile made of stacks can equal
// callgrind_annotate: for a function on a call cycle (a function
// calling itself, or "f'2" calling "f'2" under --separate-recs, or mutual
// recursion), callgrind_annotate adds up the inclusive cost of every
// nested call, counting the cost of a deep recursion once per level,
// while a profile counts each sample once whatever its stack. The cycle is
// then taken as one: the cost entering it is shared among its functions
// along paths of their calls, each function is on a stack once, and the
// total of the cycle's functions together (any of them on the stack)
// equals the inclusive cost of the calls into the cycle, which is what
// KCachegrind's cycle detection shows. Such a function's total is at most
// callgrind_annotate's.
//
// Where a function's calls cost more or less than it spent (self plus its
// own calls), which callgrind writes when the process ends inside a call
// (the exit system call's instructions are in the call's cost and in no
// cost line), for signal handlers or longjmp, a warning names it: its
// total is then what it spent. A function that starts a thread (clone) is
// the root of that thread's stacks, and its total holds them, where
// callgrind_annotate counts only the calls to it. Calls still running
// when a part was dumped are written in the later parts as calls=0; they
// are calls (callgrind_annotate, which reads one part, takes their cost as
// the caller's self cost).
func Parse(r io.Reader, o pbuild.Options) (*profile.Profile, error) {
	return parse(r, o, nil)
}

func newOwnMeter() *membudget.Meter {
	return &membudget.Meter{Max: maxMemory, Limit: "the callgrind reader's own limit, whatever " + membudget.InputEnv + " says"}
}

// charge charges n elements of kind k costing cost bytes to the parse's
// budgets, before they are allocated: the error of an exceeded one means
// they must not be.
func (ps *parser) charge(k membudget.Kind, n, cost int64) error {
	if err := ps.own.Charge(k, n, cost); err != nil {
		return err
	}
	if ps.meter != nil {
		return ps.meter.Charge(k, n, cost)
	}
	return nil
}

// expand is charge for what the builder derives from the call graph
// (stack frames, the samples that hold them): held to the budgets' limits,
// not to the caller's ratio of memory to input (membudget.Meter.Expand).
func (ps *parser) expand(k membudget.Kind, n, cost int64) error {
	if err := ps.own.Expand(k, n, cost); err != nil {
		return err
	}
	if ps.meter != nil {
		return ps.meter.Expand(k, n, cost)
	}
	return nil
}

// err returns the error of an exceeded budget, or nil.
func (ps *parser) err() error {
	if err := ps.own.Err(); err != nil {
		return err
	}
	if ps.meter != nil {
		return ps.meter.Err()
	}
	return nil
}

func parse(r io.Reader, o pbuild.Options, am *addrMode) (*profile.Profile, error) {
	ps := &parser{
		addr:    am,
		meter:   o.Meter,
		nodeOf:  make(map[[2]string]int32),
		intern:  make(map[string]string),
		groupOf: make(map[string]*group),
		cur:     -1,
		main:    -1,
		callee:  -1,
		npos:    1,
		own:     newOwnMeter(),
	}
	for i := range ps.names {
		ps.names[i] = make(map[int64]string)
	}
	var warnings []string
	warnSeen := make(map[string]int)
	ps.warn = func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if _, ok := warnSeen[msg]; ok {
			warnSeen[msg]++
			return
		}
		warnSeen[msg] = 1
		if len(warnings) < pbuild.MaxWarnings {
			warnings = append(warnings, msg)
		}
	}
	if err := ps.read(r); err != nil {
		return nil, err
	}
	p, err := ps.build()
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		if n := warnSeen[w]; n > 1 {
			w = fmt.Sprintf("%s (%d times)", w, n)
		}
		p.Comments = meta.AppendWarning(p.Comments, w)
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("internal error: built profile is invalid: %w", err)
	}
	return p, nil
}
