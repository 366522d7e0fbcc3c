// Package binsym symbolises program counters of a Go binary from the
// binary itself: each PC becomes its frames, inlined calls included,
// innermost first, with function names as runtime/pprof and go tool pprof
// print them (example.com/m/pkg.(*T).method, generic functions as
// pkg.F[...]).
//
// It reads the DWARF debugging information (DW_TAG_subprogram and nested
// DW_TAG_inlined_subroutine entries with their abstract origins, call
// files and lines, and the line table). A binary without DWARF (built
// with -ldflags=-w) is symbolised from the Go line table (.gopclntab)
// without inlined frames, and a PC covered by neither is named after the
// ELF symbol that holds it.
package binsym

import (
	"debug/dwarf"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Frame is one function of a PC's call stack.
type Frame struct {
	Func      string // as runtime.Frame.Function prints it: pkg.F[...]
	Symbol    string // the symbol name, as runtime/pprof writes it: pkg.F[go.shape.int]
	File      string
	Line      int
	StartLine int // the line the function is declared on, 0 if unknown
}

// Binary is an opened executable.
type Binary struct {
	Path string
	// PIE reports whether the binary is position independent (ELF type
	// ET_DYN): its PCs at run time are its file addresses plus a bias.
	PIE bool
	// TextOffset and TextAddr are the file offset and virtual address of
	// the executable segment, to turn a run-time address in a mapping
	// of the file into a file address.
	TextOffset, TextAddr uint64

	dwarf  *dwarf.Data
	syms   []elf.Symbol // function symbols sorted by address
	pcln   *gosym.Table
	text   []byte // the .text section, at textAt
	textAt uint64
	mu     sync.Mutex
	cache  map[uint64][]Frame // what Resolve found, nil for PCs it did not
	amd64  bool
}

// Open reads the symbol information of the ELF executable at path.
func Open(path string) (*Binary, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("binsym: %s: %w", path, err)
	}
	defer f.Close()
	b := &Binary{Path: path, PIE: f.Type == elf.ET_DYN}
	found := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			b.TextOffset, b.TextAddr, found = p.Off, p.Vaddr, true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("binsym: %s has no executable segment", path)
	}
	if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
				b.syms = append(b.syms, s)
			}
		}
		sort.Slice(b.syms, func(i, j int) bool { return b.syms[i].Value < b.syms[j].Value })
	}
	if t := f.Section(".text"); t != nil && f.Machine == elf.EM_X86_64 {
		if data, err := t.Data(); err == nil {
			b.text, b.textAt, b.amd64 = data, t.Addr, true
		}
	}
	if d, err := f.DWARF(); err == nil {
		b.dwarf = d
	}
	if s := f.Section(".gopclntab"); s != nil {
		if data, err := s.Data(); err == nil {
			text := uint64(0)
			if t := f.Section(".text"); t != nil {
				text = t.Addr
			}
			if tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text)); err == nil {
				b.pcln = tab
			}
		}
	}
	if b.dwarf == nil && b.pcln == nil && len(b.syms) == 0 {
		return nil, fmt.Errorf("binsym: %s has no DWARF, no Go line table and no symbols", path)
	}
	return b, nil
}

// FileAddr turns a run-time address in a mapping of the binary that starts
// at start and maps the file from offset into a file address.
func (b *Binary) FileAddr(pc, start, offset uint64) uint64 {
	if !b.PIE {
		return pc
	}
	return pc - start + offset - b.TextOffset + b.TextAddr
}

// Resolve symbolises the file addresses pcs. Each PC present in the
// result maps to its frames, innermost first; a PC the binary does not
// describe is absent. Callers pass the address of the instruction itself:
// for a return address, the address minus one. The Binary remembers what
// it found, so that the runs of one binary read its DWARF for new PCs only.
// It is safe for concurrent use.
func (b *Binary) Resolve(pcs []uint64) (map[uint64][]Frame, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cache == nil {
		b.cache = map[uint64][]Frame{}
	}
	var want []uint64
	for _, pc := range pcs {
		if _, ok := b.cache[pc]; !ok {
			want = append(want, pc)
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
	want = dedup(want)
	if err := b.resolve(want, b.cache); err != nil {
		return nil, err
	}
	out := make(map[uint64][]Frame, len(pcs))
	for _, pc := range pcs {
		if f := b.cache[pc]; f != nil {
			out[pc] = f
		}
	}
	return out, nil
}

// resolve symbolises the sorted, distinct PCs want into out, nil for a PC
// the binary does not describe.
func (b *Binary) resolve(want []uint64, out map[uint64][]Frame) error {
	if len(want) == 0 {
		return nil
	}
	if b.dwarf != nil {
		if err := b.resolveDWARF(want, out); err != nil {
			return fmt.Errorf("binsym: %s: %w", b.Path, err)
		}
	}
	for _, pc := range want {
		if _, ok := out[pc]; ok {
			continue
		}
		out[pc] = nil
		if b.pcln != nil {
			if file, line, fn := b.pcln.PCToLine(pc); fn != nil {
				out[pc] = []Frame{{Func: PrintName(fn.Name), Symbol: fn.Name, File: file, Line: line}}
				continue
			}
		}
		i := sort.Search(len(b.syms), func(i int) bool { return b.syms[i].Value > pc }) - 1
		if i >= 0 && (pc < b.syms[i].Value+b.syms[i].Size || b.syms[i].Size == 0) {
			out[pc] = []Frame{{Func: PrintName(b.syms[i].Name), Symbol: b.syms[i].Name}}
		}
	}
	return nil
}

// CallsFunc reports whether the file address ret is the return address of
// a direct call to the function that holds the file address pc: the five
// bytes before ret are an amd64 CALL rel32 whose target is that
// function's entry. A sampler that reads the word at the stack pointer
// of an interrupted function asks this to learn whether the word is its
// return address, which a frame-pointer walk misses when the function
// has not pushed a frame (a frameless leaf, or one in its prologue).
// Always false on other architectures.
func (b *Binary) CallsFunc(ret, pc uint64) bool {
	if !b.amd64 || ret < b.textAt+5 || ret > b.textAt+uint64(len(b.text)) {
		return false
	}
	i := sort.Search(len(b.syms), func(i int) bool { return b.syms[i].Value > pc }) - 1
	if i < 0 || pc >= b.syms[i].Value+b.syms[i].Size {
		return false
	}
	ins := b.text[ret-5-b.textAt : ret-b.textAt]
	if ins[0] != 0xe8 {
		return false
	}
	rel := int32(uint32(ins[1]) | uint32(ins[2])<<8 | uint32(ins[3])<<16 | uint32(ins[4])<<24)
	return ret+uint64(int64(rel)) == b.syms[i].Value
}

func dedup(s []uint64) []uint64 {
	if len(s) == 0 {
		return s
	}
	j := 0
	for _, v := range s[1:] {
		if v != s[j] {
			j++
			s[j] = v
		}
	}
	return s[:j+1]
}

// PrintName is the name runtime.Frame.Function gives a symbol: the type
// arguments of a generic function replaced by "..." (runtime's
// funcNamePiecesForPrint).
func PrintName(name string) string {
	i := strings.IndexByte(name, '[')
	if i < 0 {
		return name
	}
	j := strings.LastIndexByte(name, ']')
	if j <= i {
		return name
	}
	return name[:i] + "[...]" + name[j+1:]
}

// node is a subprogram or an inlined call, with the calls inlined into it.
type node struct {
	ranges   [][2]uint64
	origin   dwarf.Offset // abstract origin, 0 if none
	name     string
	declLine int
	callFile int
	callLine int
	children []*node
}

func (n *node) contains(pc uint64) bool {
	for _, r := range n.ranges {
		if r[0] <= pc && pc < r[1] {
			return true
		}
	}
	return false
}

// anyIn reports whether one of the sorted pcs falls in ranges.
func anyIn(ranges [][2]uint64, pcs []uint64) bool {
	for _, r := range ranges {
		i := sort.Search(len(pcs), func(i int) bool { return pcs[i] >= r[0] })
		if i < len(pcs) && pcs[i] < r[1] {
			return true
		}
	}
	return false
}

// lineRow is one row of a compile unit's line table.
type lineRow struct {
	addr uint64
	file string
	line int
	end  bool // end of a sequence: no code from addr on
}

// resolveDWARF walks the compile units that hold a wanted PC and, in
// them, the subprograms that do, and reads their inlined calls.
func (b *Binary) resolveDWARF(want []uint64, out map[uint64][]Frame) error {
	d := b.dwarf
	r := d.Reader()
	names := map[dwarf.Offset]*node{} // abstract origins read so far
	for {
		cu, err := r.Next()
		if err != nil {
			return err
		}
		if cu == nil {
			return nil
		}
		if cu.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		cuRanges, err := d.Ranges(cu)
		if err != nil || !anyIn(cuRanges, want) {
			r.SkipChildren()
			continue
		}
		var tops []*node
		if cu.Children {
			if err := b.readChildren(r, want, &tops, true); err != nil {
				return err
			}
		}
		if len(tops) == 0 {
			continue
		}
		lr, err := d.LineReader(cu)
		if err != nil || lr == nil {
			continue
		}
		var rows []lineRow
		var le dwarf.LineEntry
		for lr.Next(&le) == nil {
			row := lineRow{addr: le.Address, line: le.Line, end: le.EndSequence}
			if le.File != nil {
				row.file = le.File.Name
			}
			rows = append(rows, row)
		}
		files := lr.Files() // complete now that the table was read
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].addr < rows[j].addr })
		for _, top := range tops {
			for _, pc := range want {
				if !top.contains(pc) {
					continue
				}
				chain := []*node{top}
				for n := top; ; {
					var next *node
					for _, c := range n.children {
						if c.contains(pc) {
							next = c
							break
						}
					}
					if next == nil {
						break
					}
					chain = append(chain, next)
					n = next
				}
				file, line := lookupLine(rows, pc)
				frames := make([]Frame, 0, len(chain))
				for i := len(chain) - 1; i >= 0; i-- {
					n := chain[i]
					name, decl := b.nameOf(n, names)
					frames = append(frames, Frame{Func: PrintName(name), Symbol: name, File: file, Line: line, StartLine: decl})
					if n.callFile > 0 && n.callFile < len(files) && files[n.callFile] != nil {
						file = files[n.callFile].Name
					} else if n.callFile == 0 && len(files) > 0 && files[0] != nil {
						file = files[0].Name
					}
					line = n.callLine
				}
				if frames[0].Func != "" {
					out[pc] = frames
				}
			}
		}
	}
}

// lookupLine finds the row that covers pc.
func lookupLine(rows []lineRow, pc uint64) (string, int) {
	i := sort.Search(len(rows), func(i int) bool { return rows[i].addr > pc }) - 1
	if i < 0 || rows[i].end {
		return "", 0
	}
	return rows[i].file, rows[i].line
}

// readChildren reads the entries after one with children up to the end of
// its children. At the top of a compile unit it keeps the subprograms that
// hold a wanted PC; inside them, the inlined calls.
func (b *Binary) readChildren(r *dwarf.Reader, want []uint64, into *[]*node, top bool) error {
	for {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil || e.Tag == 0 {
			return nil
		}
		keep := e.Tag == dwarf.TagSubprogram && top || e.Tag == dwarf.TagInlinedSubroutine && !top
		if !keep {
			if e.Children {
				if e.Tag == dwarf.TagLexDwarfBlock && !top {
					// Inlined calls may sit in lexical blocks.
					if err := b.readChildren(r, want, into, false); err != nil {
						return err
					}
					continue
				}
				r.SkipChildren()
			}
			continue
		}
		ranges, err := b.dwarf.Ranges(e)
		if err != nil || len(ranges) == 0 || !anyIn(ranges, want) {
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		n := &node{ranges: ranges}
		n.name, _ = e.Val(dwarf.AttrName).(string)
		if o, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
			n.origin = o
		}
		if v, ok := e.Val(dwarf.AttrDeclLine).(int64); ok {
			n.declLine = int(v)
		}
		if v, ok := e.Val(dwarf.AttrCallFile).(int64); ok {
			n.callFile = int(v)
		}
		if v, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
			n.callLine = int(v)
		}
		*into = append(*into, n)
		if e.Children {
			if err := b.readChildren(r, want, &n.children, false); err != nil {
				return err
			}
		}
	}
}

// nameOf is a node's function name and declaration line, from its
// abstract origin when it has one.
func (b *Binary) nameOf(n *node, cache map[dwarf.Offset]*node) (string, int) {
	if n.name != "" || n.origin == 0 {
		return n.name, n.declLine
	}
	o, ok := cache[n.origin]
	if !ok {
		o = &node{}
		r := b.dwarf.Reader()
		r.Seek(n.origin)
		if e, err := r.Next(); err == nil && e != nil {
			o.name, _ = e.Val(dwarf.AttrName).(string)
			if v, ok := e.Val(dwarf.AttrDeclLine).(int64); ok {
				o.declLine = int(v)
			}
		}
		cache[n.origin] = o
	}
	return o.name, o.declLine
}
