package gate

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/internal/binsym"
	"github.com/hotbudget/hotbudget/internal/callgrind"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// How record reads a counted process's callgrind dump: its addresses
// symbolised from the test binary's DWARF, inlined frames included, and
// which functions' code was inlined into which (for the report).

// readDump reads a callgrind dump, symbolised by sym (dumpSymbolizer).
func readDump(dump string, sym callgrind.Symbolizer) (*profile.Profile, error) {
	f, err := os.Open(dump)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := callgrind.ParseByAddress(f, pbuild.Options{Name: dump}, sym)
	if err != nil {
		return nil, fmt.Errorf("callgrind's output: %w", err)
	}
	return p, nil
}

// cpuLine is the line go test names the CPU in.
var cpuLine = regexp.MustCompile(`(?m)^cpu: (.*)$`)

// dumpSymbolizer symbolises the addresses of a callgrind dump of binary
// at once, from its DWARF (inlined frames included), and names them as
// runtime/pprof does (a generic function's symbol, with its shape).
func (r *recorder) dumpSymbolizer(binary, dump string) (callgrind.Symbolizer, error) {
	bin, err := r.binary(binary)
	if err != nil {
		return nil, err
	}
	pcs, err := dumpAddresses(dump)
	if err != nil {
		return nil, err
	}
	frames, err := bin.Resolve(pcs)
	if err != nil {
		return nil, err
	}
	name := func(f binsym.Frame) string {
		if f.Symbol != "" {
			return f.Symbol
		}
		return f.Func
	}
	// Which compiled function each inlined function's counted code is in,
	// for the report (diff.CountReport.NoteInlined).
	r.exactMu.Lock()
	if r.inlined == nil {
		r.inlined = map[string]map[string]map[string]bool{}
	}
	in := r.inlined[binary]
	if in == nil {
		in = map[string]map[string]bool{}
		r.inlined[binary] = in
	}
	for _, fs := range frames {
		if len(fs) < 2 {
			continue
		}
		// fs is innermost first; the last is the compiled function.
		outer := name(fs[len(fs)-1])
		for _, f := range fs[:len(fs)-1] {
			n := name(f)
			if in[n] == nil {
				in[n] = map[string]bool{}
			}
			in[n][outer] = true
		}
	}
	r.exactMu.Unlock()
	return func(addr uint64) ([]callgrind.Frame, bool) {
		fs := frames[addr]
		if len(fs) == 0 {
			return nil, false
		}
		out := make([]callgrind.Frame, len(fs))
		for i, f := range fs { // innermost first: reversed
			out[len(fs)-1-i] = callgrind.Frame{Func: name(f), File: f.File}
		}
		return out, true
	}, nil
}

// inlinedInto is, for each inlined function counted in the test binaries
// of package pkg on sides, the compiled functions its code was in.
func (r *recorder) inlinedInto(sides []*recSide, pkg string) map[string][]string {
	r.exactMu.Lock()
	defer r.exactMu.Unlock()
	sets := map[string]map[string]bool{}
	for _, s := range sides {
		b := s.bins[pkg]
		if b == nil {
			continue
		}
		for f, outers := range r.inlined[b.path] {
			if sets[f] == nil {
				sets[f] = map[string]bool{}
			}
			for g := range outers {
				sets[f][g] = true
			}
		}
	}
	out := make(map[string][]string, len(sets))
	for f, set := range sets {
		out[f] = sortedKeys(set)
	}
	return out
}

// binary is the symbols of the test binary at path, opened once for
// every run of it (its symbols are cached for the next runs).
func (r *recorder) binary(path string) (*binsym.Binary, error) {
	r.exactMu.Lock()
	defer r.exactMu.Unlock()
	if bin := r.bins[path]; bin != nil {
		return bin, nil
	}
	ef, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	typ := ef.Type
	ef.Close()
	if typ != elf.ET_EXEC {
		return nil, fmt.Errorf("%s is position-independent (%v): --instructions needs the default build mode, whose addresses are the file's", path, typ)
	}
	bin, err := binsym.Open(path)
	if err != nil {
		return nil, err
	}
	if r.bins == nil {
		r.bins = map[string]*binsym.Binary{}
	}
	r.bins[path] = bin
	return bin, nil
}

// dumpAddresses lists the instruction addresses a dump written with
// --dump-instr=yes --compress-pos=no names: cost lines and call targets.
func dumpAddresses(dump string) ([]uint64, error) {
	f, err := os.Open(dump)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[uint64]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), callgrind.MaxLineBytes)
	for sc.Scan() {
		line := sc.Text()
		if t, ok := strings.CutPrefix(line, "calls="); ok {
			if f := strings.Fields(t); len(f) > 1 {
				line = f[1]
			}
		}
		if !strings.HasPrefix(line, "0x") {
			continue
		}
		field, _, _ := strings.Cut(line, " ")
		if v, err := strconv.ParseUint(field[2:], 16, 64); err == nil {
			seen[v] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	pcs := make([]uint64, 0, len(seen))
	for pc := range seen {
		pcs = append(pcs, pc)
	}
	slices.Sort(pcs)
	return pcs, nil
}
