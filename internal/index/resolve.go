package index

import (
	"errors"
	"fmt"

	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// idTable maps pprof ids to dense indexes: a slice when the ids are
// compact, as every writer makes them, else a map.
type idTable struct {
	dense  []int32 // id -> index+1
	sparse map[uint64]int32
}

func newIDTable(ids func(yield func(uint64) bool), n int) (idTable, error) {
	var t idTable
	maxID := uint64(0)
	for id := range ids {
		maxID = max(maxID, id)
	}
	if maxID <= uint64(4*n+1024) {
		t.dense = make([]int32, maxID+1)
	} else {
		t.sparse = make(map[uint64]int32, n)
	}
	i := int32(0)
	for id := range ids {
		if id == 0 {
			return t, errors.New("reserved id 0")
		}
		if _, ok := t.get(id); ok {
			return t, fmt.Errorf("duplicate id %d", id)
		}
		if t.dense != nil {
			t.dense[id] = i + 1
		} else {
			t.sparse[id] = i
		}
		i++
	}
	return t, nil
}

func (t *idTable) get(id uint64) (int32, bool) {
	if t.dense != nil {
		if id < uint64(len(t.dense)) && t.dense[id] != 0 {
			return t.dense[id] - 1, true
		}
		return 0, false
	}
	i, ok := t.sparse[id]
	return i, ok
}

func (d *decoder) build() (*Index, error) {
	for _, i := range d.stringRefs {
		if _, err := d.str(i); err != nil {
			return nil, err
		}
	}
	if len(d.types) == 0 && len(d.samples) > 0 {
		return nil, errors.New("missing sample type information")
	}
	b := newBuilder(len(d.funcs)+1, len(d.locs), len(d.samples))
	x := b.x
	var err error
	x.Types = make([]pbuild.ValueType, len(d.types))
	for i, vt := range d.types {
		if x.Types[i].Type, err = d.str(vt[0]); err != nil {
			return nil, err
		}
		if x.Types[i].Unit, err = d.str(vt[1]); err != nil {
			return nil, err
		}
	}
	if x.DefaultType, err = d.str(d.defaultType); err != nil {
		return nil, err
	}
	if x.PeriodUnit, err = d.str(d.period[1]); err != nil {
		return nil, err
	}
	if _, err = d.str(d.period[0]); err != nil {
		return nil, err
	}
	x.Period = d.periodVal
	x.DurationNanos = d.duration
	for _, c := range d.comments {
		s, err := d.str(c)
		if err != nil {
			return nil, err
		}
		x.Comments = append(x.Comments, s)
	}
	x.Facts = meta.Read(x.Comments)

	// Mappings: only the file names matter, for unsymbolized locations.
	mt, err := newIDTable(func(yield func(uint64) bool) {
		for _, m := range d.maps {
			if !yield(m.id) {
				return
			}
		}
	}, len(d.maps))
	if err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	mapFile := make([]string, len(d.maps))
	for i, m := range d.maps {
		if mapFile[i], err = d.str(int64(m.file)); err != nil {
			return nil, err
		}
	}

	// Functions: strings resolved once, interned on first use.
	ft, err := newIDTable(func(yield func(uint64) bool) {
		for _, f := range d.funcs {
			if !yield(f.id) {
				return
			}
		}
	}, len(d.funcs))
	if err != nil {
		return nil, fmt.Errorf("function: %w", err)
	}
	funcs := make([]Func, len(d.funcs))
	for i, f := range d.funcs {
		var e [3]error
		funcs[i].Name, e[0] = d.str(f.name)
		funcs[i].SystemName, e[1] = d.str(f.system)
		funcs[i].File, e[2] = d.str(f.file)
		funcs[i].StartLine = f.start
		if err := errors.Join(e[:]...); err != nil {
			return nil, err
		}
	}
	funcID := make([]int32, len(d.funcs)) // index+1 once interned

	// Locations, in order: their frames intern the functions.
	lt, err := newIDTable(func(yield func(uint64) bool) {
		for _, l := range d.locs {
			if !yield(l.id) {
				return
			}
		}
	}, len(d.locs))
	if err != nil {
		return nil, fmt.Errorf("location: %w", err)
	}
	x.FrameFunc = make([]int32, 0, len(d.lines)+len(d.locs)/8)
	x.FrameLine = make([]int64, 0, cap(x.FrameFunc))
	x.FrameCol = make([]int64, 0, cap(x.FrameFunc))
	for _, l := range d.locs {
		unsym := func() string {
			file := ""
			if mi, ok := mt.get(l.mapping); ok {
				file = mapFile[mi]
			}
			return pbuild.UnsymbolizedMappingName(file)
		}
		if l.lines[0] == l.lines[1] {
			b.frame(b.fn(Func{Name: unsym()}), 0, 0)
			b.endLocation()
			continue
		}
		for _, ln := range d.lines[l.lines[0]:l.lines[1]] {
			fi, ok := ft.get(ln.fn)
			if !ok || ln.fn == 0 {
				return nil, fmt.Errorf("location %d has a line with no function", l.id)
			}
			var id int32
			if funcs[fi].Name == "" {
				f := funcs[fi]
				f.Name = unsym()
				id = b.fn(f)
			} else if funcID[fi] != 0 {
				id = funcID[fi] - 1
			} else {
				id = b.fn(funcs[fi])
				funcID[fi] = id + 1
			}
			b.frame(id, ln.line, ln.col)
		}
		b.endLocation()
	}
	if b.err != nil {
		return nil, b.err
	}
	d.lines, d.funcs = nil, nil

	// Samples.
	stride := len(x.Types)
	x.Values = make([]int64, 0, len(d.samples)*stride)
	b.reserve(d.countRefs())
	var labels labelDecoder
	labels.d, labels.b = d, b
	for _, sp := range d.samples {
		sb := d.data[sp.off : sp.off+sp.len]
		nv := len(x.Values)
		labels.raw = labels.raw[:0]
		for len(sb) > 0 {
			num, typ, u, fd, rest, err := field(sb)
			if err != nil {
				return nil, err
			}
			sb = rest
			switch num {
			case 1:
				switch typ {
				case wireVarint:
					li, ok := lt.get(u)
					if !ok {
						return nil, errors.New("sample has nil location")
					}
					x.StackLocs = append(x.StackLocs, li)
				case wireBytes:
					for len(fd) > 0 {
						var v uint64
						if fd[0] < 0x80 {
							v, fd = uint64(fd[0]), fd[1:]
						} else {
							var n int
							if v, n, err = varint(fd); err != nil {
								return nil, err
							}
							fd = fd[n:]
						}
						li, ok := lt.get(v)
						if !ok {
							return nil, errors.New("sample has nil location")
						}
						x.StackLocs = append(x.StackLocs, li)
					}
				default:
					return nil, errWireType
				}
			case 2:
				if err := repeated(typ, u, fd, func(v uint64) { x.Values = append(x.Values, int64(v)) }); err != nil {
					return nil, err
				}
			case 3:
				if typ != wireBytes {
					return nil, errWireType
				}
				if err := labels.add(fd); err != nil {
					return nil, err
				}
			}
		}
		if len(x.Values)-nv != stride {
			return nil, fmt.Errorf("mismatch: sample has %d values vs. %d types", len(x.Values)-nv, stride)
		}
		x.SampleStack = append(x.SampleStack, b.stack())
		ls, err := labels.set()
		if err != nil {
			return nil, err
		}
		x.SampleLabels = append(x.SampleLabels, ls)
		if b.err != nil {
			return nil, b.err
		}
	}
	return x, nil
}

// countRefs counts the location ids of all samples, for reserve. Malformed
// samples are left for the decoding pass to report.
func (d *decoder) countRefs() int {
	n := 0
	for _, sp := range d.samples {
		sb := d.data[sp.off : sp.off+sp.len]
		for len(sb) > 0 {
			num, typ, _, fd, rest, err := field(sb)
			if err != nil {
				break
			}
			sb = rest
			switch {
			case num == 1 && typ == wireVarint:
				n++
			case num == 1 && typ == wireBytes:
				for _, c := range fd {
					if c < 0x80 {
						n++
					}
				}
			}
		}
	}
	return n
}
