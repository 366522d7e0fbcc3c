package index

import (
	"errors"
)

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

// topField decodes a whole top-level field: its number, wire type,
// varint value or bytes fd, which start at offset off of the message.
func (d *decoder) topField(num, typ int, u uint64, fd []byte, off uint32) error {
	switch num {
	case 1, 11: // sample_type, period_type
		if typ != wireBytes {
			return errWireType
		}
		vt, err := valueType(fd)
		if err != nil {
			return err
		}
		if num == 1 {
			d.types = append(d.types, vt)
		} else {
			d.period, d.hasPT = vt, true
		}
	case 2:
		if typ != wireBytes {
			return errWireType
		}
		d.samples = append(d.samples, span{off, uint32(len(fd))})
	case 3:
		if typ != wireBytes {
			return errWireType
		}
		return d.mapping(fd)
	case 4:
		if typ != wireBytes {
			return errWireType
		}
		return d.location(fd)
	case 5:
		if typ != wireBytes {
			return errWireType
		}
		return d.function(fd)
	case 6:
		if typ != wireBytes {
			return errWireType
		}
		d.strs = append(d.strs, span{off, uint32(len(fd))})
		if d.strs[0].len != 0 {
			return errors.New("string_table[0] must be ''")
		}
	case 7, 8, 15: // drop_frames, keep_frames, doc_url: checked, not kept
		if err := scalar(typ); err != nil {
			return err
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
			return err
		}
		if d.timeNanos != 0 {
			return errors.New("concatenated profiles detected")
		}
		d.timeNanos = int64(u)
	case 10:
		if err := scalar(typ); err != nil {
			return err
		}
		d.duration = int64(u)
	case 12:
		if err := scalar(typ); err != nil {
			return err
		}
		d.periodVal = int64(u)
	case 13:
		return repeated(typ, u, fd, func(v uint64) { d.comments = append(d.comments, int64(v)) })
	case 14:
		if err := scalar(typ); err != nil {
			return err
		}
		d.defaultType = int64(u)
	}
	return nil
}

// finish builds the Index once every field is decoded; data is the
// whole message.
func (d *decoder) finish(data []byte) (*Index, error) {
	d.data = data
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
