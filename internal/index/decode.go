package index

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unsafe"

	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// MaxDecoded bounds how large a profile may be once decompressed, as the
// loaders bound it.
const MaxDecoded = 1 << 30

// Decode builds the Index of a profile in pprof's protobuf encoding
// (profile.proto), gzip-compressed or not, without building a
// *profile.Profile. It accepts exactly what profile.ParseData followed by
// CheckValid accepts in that encoding, and gives the Index FromProfile
// gives for the parsed profile. It rejects everything else, including
// pprof's legacy formats, with an error that need not match pprof's: the
// caller falls back to the loaders for their message.
//
// It also rejects, as the loaders do, a profile whose parsed form
// membudget estimates at more than MaxDecoded/2 bytes besides its input, or at
// more than membudget.Ratio bytes per byte of input: gzip-compressed
// input is checked as it is decompressed, so such a profile is refused
// before it is all in memory.
func Decode(data []byte) (*Index, error) {
	w := membudget.NewPprofWalker(MaxDecoded, membudget.ForLimit(MaxDecoded))
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		raw, err := gunzip(data, w)
		if err != nil {
			return nil, err
		}
		data = raw
	} else {
		if len(data) > MaxDecoded {
			return nil, fmt.Errorf("larger than %d bytes", MaxDecoded)
		}
		if err := w.Feed(data); err != nil {
			return nil, err
		}
	}
	if len(data) == 0 {
		return nil, errors.New("empty input")
	}
	var d decoder
	return d.decode(data)
}

// gunzip decompresses data through w, which may refuse it before it is
// all in memory. No buffer is sized from the gzip trailer, which the file
// may fake: the output grows in chunks as it is read.
func gunzip(data []byte, w *membudget.PprofWalker) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	var chunks [][]byte
	size, total := max(4*len(data), 64<<10), 0
	for eof := false; !eof; size = min(2*size, 64<<20) {
		buf := make([]byte, min(size, MaxDecoded+1-total))
		n := 0
		for n < len(buf) && !eof {
			m, err := zr.Read(buf[n:])
			n += m
			if err == io.EOF {
				eof = true
			} else if err != nil {
				return nil, fmt.Errorf("gzip: %w", err)
			}
		}
		total += n
		if total > MaxDecoded {
			return nil, fmt.Errorf("larger than %d bytes decompressed", MaxDecoded)
		}
		if err := w.Feed(buf[:n]); err != nil {
			return nil, err
		}
		chunks = append(chunks, buf[:n])
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	out := make([]byte, 0, total)
	for i, c := range chunks {
		out = append(out, c...)
		chunks[i] = nil
	}
	return out, nil
}

var (
	errVarint    = errors.New("bad varint")
	errTruncated = errors.New("truncated field")
	errWireType  = errors.New("wire type mismatch")
	errString    = errors.New("string index out of range")
)

// Wire types.
const (
	wireVarint = 0
	wire64     = 1
	wireBytes  = 2
	wire32     = 5
)

// varint decodes a base-128 varint as profile.Parse does: at most ten
// bytes, high bits beyond 64 dropped.
func varint(b []byte) (uint64, int, error) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1, nil
	}
	var u uint64
	for i := 0; i < 10 && i < len(b); i++ {
		u |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return u, i + 1, nil
		}
	}
	return 0, 0, errVarint
}

// field reads one field: its number, wire type, varint value or bytes, and
// the rest of b.
func field(b []byte) (num int, typ int, u uint64, data, rest []byte, err error) {
	tag, n, err := varint(b)
	if err != nil {
		return 0, 0, 0, nil, nil, err
	}
	b = b[n:]
	num, typ = int(tag>>3), int(tag&7)
	switch typ {
	case wireVarint:
		u, n, err = varint(b)
		if err != nil {
			return 0, 0, 0, nil, nil, err
		}
		return num, typ, u, nil, b[n:], nil
	case wire64:
		if len(b) < 8 {
			return 0, 0, 0, nil, nil, errTruncated
		}
		return num, typ, binary.LittleEndian.Uint64(b), nil, b[8:], nil
	case wireBytes:
		l, n, err := varint(b)
		if err != nil {
			return 0, 0, 0, nil, nil, err
		}
		b = b[n:]
		if l > uint64(len(b)) {
			return 0, 0, 0, nil, nil, errTruncated
		}
		return num, typ, 0, b[:l], b[l:], nil
	case wire32:
		if len(b) < 4 {
			return 0, 0, 0, nil, nil, errTruncated
		}
		return num, typ, uint64(binary.LittleEndian.Uint32(b)), nil, b[4:], nil
	}
	return 0, 0, 0, nil, nil, fmt.Errorf("unknown wire type %d", typ)
}

// repeated calls f for each value of a repeated integer field, packed or not.
func repeated(typ int, u uint64, data []byte, f func(uint64)) error {
	switch typ {
	case wireVarint:
		f(u)
		return nil
	case wireBytes:
		for len(data) > 0 {
			v, n, err := varint(data)
			if err != nil {
				return err
			}
			f(v)
			data = data[n:]
		}
		return nil
	}
	return errWireType
}

type span struct{ off, len uint32 }

type rawLine struct {
	fn        uint64
	line, col int64
}

type rawLoc struct {
	id, mapping uint64
	lines       [2]int32 // range in decoder.lines
}

type rawFunc struct {
	id                        uint64
	name, system, file, start int64
}

type decoder struct {
	data    []byte
	strs    []span
	types   [][2]int64 // type, unit string indexes
	period  [2]int64
	hasPT   bool
	samples []span
	maps    []struct{ id, file uint64 }
	locs    []rawLoc
	lines   []rawLine
	funcs   []rawFunc

	timeNanos, duration, periodVal int64
	comments                       []int64
	defaultType                    int64
	// Indexes of strings profile.Parse looks up but the Index does not
	// keep, checked against the table: drop_frames, keep_frames and
	// doc_url (the last of each counts) and every mapping's build id.
	dropX, keepX, docX int64
	stringRefs         []int64
}

func (d *decoder) str(i int64) (string, error) {
	if i < 0 || i >= int64(len(d.strs)) {
		return "", errString
	}
	s := d.strs[i]
	return string(d.data[s.off : s.off+s.len]), nil
}

// valueType decodes a ValueType message into its two string indexes.
func valueType(b []byte) ([2]int64, error) {
	var vt [2]int64
	for len(b) > 0 {
		num, typ, u, _, rest, err := field(b)
		if err != nil {
			return vt, err
		}
		b = rest
		if num == 1 || num == 2 {
			if typ != wireVarint {
				return vt, errWireType
			}
			vt[num-1] = int64(u)
		}
	}
	return vt, nil
}

// scalar checks that a known scalar field is a varint.
func scalar(typ int) error {
	if typ != wireVarint {
		return errWireType
	}
	return nil
}

func (d *decoder) decode(data []byte) (*Index, error) {
	d.data = data
	if uint64(len(data)) > 1<<32-1 {
		return nil, fmt.Errorf("larger than %d bytes", uint64(1<<32-1))
	}
	b := data
	for len(b) > 0 {
		num, typ, u, fd, rest, err := field(b)
		if err != nil {
			return nil, err
		}
		b = rest
		switch num {
		case 1, 11: // sample_type, period_type
			if typ != wireBytes {
				return nil, errWireType
			}
			vt, err := valueType(fd)
			if err != nil {
				return nil, err
			}
			if num == 1 {
				d.types = append(d.types, vt)
			} else {
				d.period, d.hasPT = vt, true
			}
		case 2:
			if typ != wireBytes {
				return nil, errWireType
			}
			d.samples = append(d.samples, span{uint32(len(data) - len(fd) - len(rest)), uint32(len(fd))})
		case 3:
			if typ != wireBytes {
				return nil, errWireType
			}
			if err := d.mapping(fd); err != nil {
				return nil, err
			}
		case 4:
			if typ != wireBytes {
				return nil, errWireType
			}
			if err := d.location(fd); err != nil {
				return nil, err
			}
		case 5:
			if typ != wireBytes {
				return nil, errWireType
			}
			if err := d.function(fd); err != nil {
				return nil, err
			}
		case 6:
			if typ != wireBytes {
				return nil, errWireType
			}
			d.strs = append(d.strs, span{uint32(len(data) - len(fd) - len(rest)), uint32(len(fd))})
			if d.strs[0].len != 0 {
				return nil, errors.New("string_table[0] must be ''")
			}
		case 7, 8, 15: // drop_frames, keep_frames, doc_url: checked, not kept
			if err := scalar(typ); err != nil {
				return nil, err
			}
			switch num {
			case 7:
				d.dropX = int64(u)
			case 8:
				d.keepX = int64(u)
			default:
				d.docX = int64(u)
			}
		case 9:
			if err := scalar(typ); err != nil {
				return nil, err
			}
			if d.timeNanos != 0 {
				return nil, errors.New("concatenated profiles detected")
			}
			d.timeNanos = int64(u)
		case 10:
			if err := scalar(typ); err != nil {
				return nil, err
			}
			d.duration = int64(u)
		case 12:
			if err := scalar(typ); err != nil {
				return nil, err
			}
			d.periodVal = int64(u)
		case 13:
			if err := repeated(typ, u, fd, func(v uint64) { d.comments = append(d.comments, int64(v)) }); err != nil {
				return nil, err
			}
		case 14:
			if err := scalar(typ); err != nil {
				return nil, err
			}
			d.defaultType = int64(u)
		}
	}
	d.stringRefs = append(d.stringRefs, d.dropX, d.keepX, d.docX)
	return d.build()
}

func (d *decoder) mapping(b []byte) error {
	var id, file, buildID uint64
	for len(b) > 0 {
		num, typ, u, _, rest, err := field(b)
		if err != nil {
			return err
		}
		b = rest
		if num >= 1 && num <= 10 {
			if typ != wireVarint {
				return errWireType
			}
			switch num {
			case 1:
				id = u
			case 5:
				file = u
			case 6:
				buildID = u
			}
		}
	}
	d.maps = append(d.maps, struct{ id, file uint64 }{id, file})
	d.stringRefs = append(d.stringRefs, int64(buildID))
	return nil
}

func (d *decoder) location(b []byte) error {
	l := rawLoc{lines: [2]int32{int32(len(d.lines)), 0}}
	for len(b) > 0 {
		num, typ, u, fd, rest, err := field(b)
		if err != nil {
			return err
		}
		b = rest
		switch num {
		case 1, 2, 3, 5:
			if typ != wireVarint {
				return errWireType
			}
			switch num {
			case 1:
				l.id = u
			case 2:
				l.mapping = u
			}
		case 4:
			if typ != wireBytes {
				return errWireType
			}
			var ln rawLine
			for len(fd) > 0 {
				num, typ, u, _, rest, err := field(fd)
				if err != nil {
					return err
				}
				fd = rest
				if num >= 1 && num <= 3 {
					if typ != wireVarint {
						return errWireType
					}
					switch num {
					case 1:
						ln.fn = u
					case 2:
						ln.line = int64(u)
					case 3:
						ln.col = int64(u)
					}
				}
			}
			d.lines = append(d.lines, ln)
		}
	}
	if len(d.lines) > maxID {
		return errTooLarge
	}
	l.lines[1] = int32(len(d.lines))
	d.locs = append(d.locs, l)
	return nil
}

func (d *decoder) function(b []byte) error {
	var f rawFunc
	for len(b) > 0 {
		num, typ, u, _, rest, err := field(b)
		if err != nil {
			return err
		}
		b = rest
		if num >= 1 && num <= 5 {
			if typ != wireVarint {
				return errWireType
			}
			switch num {
			case 1:
				f.id = u
			case 2:
				f.name = int64(u)
			case 3:
				f.system = int64(u)
			case 4:
				f.file = int64(u)
			case 5:
				f.start = int64(u)
			}
		}
	}
	d.funcs = append(d.funcs, f)
	return nil
}

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

// labelDecoder turns a sample's labels into a label set id, caching by the
// raw string indexes so that samples sharing labels cost one map lookup.
type labelDecoder struct {
	d       *decoder
	b       *builder
	raw     []int64 // key, str index pairs of the string labels, in order
	key     []byte
	cache   map[string]int32
	scratch []Label
}

func (l *labelDecoder) add(b []byte) error {
	var k, s, unit int64
	for len(b) > 0 {
		num, typ, u, _, rest, err := field(b)
		if err != nil {
			return err
		}
		b = rest
		if num >= 1 && num <= 4 {
			if typ != wireVarint {
				return errWireType
			}
			switch num {
			case 1:
				k = int64(u)
			case 2:
				s = int64(u)
			case 4:
				unit = int64(u)
			}
		}
	}
	if _, err := l.d.str(k); err != nil {
		return err
	}
	if s != 0 {
		if _, err := l.d.str(s); err != nil {
			return err
		}
		l.raw = append(l.raw, k, s)
	} else if unit != 0 {
		if _, err := l.d.str(unit); err != nil {
			return err
		}
	}
	return nil
}

func (l *labelDecoder) set() (int32, error) {
	if len(l.raw) == 0 {
		return 0, nil
	}
	k := l.key[:0]
	for _, v := range l.raw {
		k = appendUvarint(k, uint64(v))
	}
	l.key = k
	if id, ok := l.cache[unsafe.String(unsafe.SliceData(k), len(k))]; ok {
		return id, nil
	}
	ls := l.scratch[:0]
	for i := 0; i < len(l.raw); i += 2 {
		key, _ := l.d.str(l.raw[i])
		val, _ := l.d.str(l.raw[i+1])
		j := slices.IndexFunc(ls, func(x Label) bool { return x.Key == key })
		if j < 0 {
			ls = append(ls, Label{Key: key})
			j = len(ls) - 1
		}
		ls[j].Values = append(ls[j].Values, val)
	}
	slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Key, b.Key) })
	id := l.b.labelSet(ls)
	l.scratch = ls
	if l.cache == nil {
		l.cache = make(map[string]int32)
	}
	l.cache[string(k)] = id
	return id, nil
}
