package index

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"github.com/hotbudget/hotbudget/internal/membudget"
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
