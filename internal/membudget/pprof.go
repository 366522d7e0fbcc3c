package membudget

import (
	"fmt"
	"math"
	"slices"
)

// PprofWalker follows a pprof Profile message (profile.proto) as its
// bytes arrive, without keeping them: it refuses bytes that are no
// protobuf Profile, and fields longer than Limit, at the top level; and it
// charges Meter, when set, for what pprof's parser would build: each
// string, location and line, function, mapping, sample and its location
// ids, values and labels. Malformed nested messages, which pprof's parser
// refuses, are skipped uncounted.
type PprofWalker struct {
	Limit int64  // longest field accepted; 0: any
	Meter *Meter // charged when not nil

	off    int64 // bytes seen
	fields int   // complete top-level keys seen
	state  int   // what the next byte is part of
	v      uint64
	shift  uint
	field  uint64
	typ    uint64
	skip   int64
	packed Kind // the kind a packed field's varints are charged as; -1: none

	// Inside a sample or location (depth 1): which, and where it ends.
	inner   uint64 // 0 at the top level, else 2 (sample) or 4 (location)
	end     int64
	labeled bool // the sample has a label: its label map is charged
}

const (
	pwKey = iota
	pwVarint
	pwLength
	pwSkip
)

// profileWireTypes are the wire types pprof's decoder accepts for the
// Profile message's fields (profile.proto): 2 for messages and strings, 0
// for integers, both for the packed repeated comment field.
var profileWireTypes = map[uint64][]uint64{
	1: {2}, 2: {2}, 3: {2}, 4: {2}, 5: {2}, 6: {2}, 11: {2},
	7: {0}, 8: {0}, 9: {0}, 10: {0}, 12: {0}, 14: {0}, 15: {0},
	13: {0, 2},
}

// Fields returns how many top-level fields have begun.
func (w *PprofWalker) Fields() int { return w.fields }

func (w *PprofWalker) fail(format string, args ...any) error {
	return fmt.Errorf("not a pprof protobuf: at offset %d: %s", w.off, fmt.Sprintf(format, args...))
}

// charge adds n elements of kind k at cost each.
func (w *PprofWalker) charge(k Kind, n, cost int64) {
	if w.Meter != nil {
		w.Meter.Add(k, n, max(n, 1)*cost)
	}
}

// Feed reads the next bytes of the message.
func (w *PprofWalker) Feed(b []byte) error {
	if err := w.feed(b); err != nil {
		return err
	}
	if w.Meter != nil {
		if err := w.Meter.Read(len(b)); err != nil {
			return err
		}
	}
	return nil
}

func (w *PprofWalker) feed(b []byte) error {
	for len(b) > 0 {
		if w.state == pwSkip {
			n := min(int64(len(b)), w.skip)
			if w.packed >= 0 && w.Meter != nil {
				c := int64(0)
				for _, x := range b[:n] {
					if x < 0x80 {
						c++
					}
				}
				cost := int64(CostLocationID)
				if w.packed == Value {
					cost = CostValue
				} else if w.packed == Other {
					cost = CostOther
				}
				w.charge(w.packed, c, cost)
			}
			w.skip -= n
			w.off += n
			b = b[n:]
			if w.skip == 0 {
				w.state = pwKey
				w.packed = -1
				w.pop()
			}
			continue
		}
		c := b[0]
		b = b[1:]
		if w.shift >= 63 && c > 1 && w.inner == 0 {
			return w.fail("varint too long")
		}
		w.off++
		if w.shift >= 63 && c > 1 {
			w.malformed()
			continue
		}
		w.v |= uint64(c&0x7f) << w.shift
		w.shift += 7
		if c&0x80 != 0 {
			if w.inner != 0 && w.off == w.end {
				w.malformed() // a varint cut by the end of its message
			}
			continue
		}
		v := w.v
		w.v, w.shift = 0, 0
		var err error
		if w.inner != 0 {
			w.innerValue(v)
		} else {
			err = w.topValue(v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// topValue takes a complete varint of the Profile message.
func (w *PprofWalker) topValue(v uint64) error {
	switch w.state {
	case pwKey:
		w.field, w.typ = v>>3, v&7
		if w.field == 0 {
			return w.fail("field number 0")
		}
		if want, ok := profileWireTypes[w.field]; ok && !slices.Contains(want, w.typ) {
			return w.fail("field %d with wire type %d", w.field, w.typ)
		}
		w.fields++
		switch w.typ {
		case 0:
			w.state = pwVarint
			switch w.field {
			case 13:
				w.charge(Other, 1, CostOther)
			}
		case 1:
			w.state, w.skip = pwSkip, 8
		case 2:
			w.state = pwLength
		case 5:
			w.state, w.skip = pwSkip, 4
		default:
			return w.fail("field %d with wire type %d", w.field, w.typ)
		}
	case pwVarint:
		w.state = pwKey
	case pwLength:
		if w.Limit > 0 && v > uint64(w.Limit) {
			return fmt.Errorf("%w: field %d at offset %d is %d bytes long, more than the limit of %s",
				ErrTooLarge, w.field, w.off, v, SizeString(w.Limit))
		}
		n := int64(min(v, math.MaxInt64/2))
		w.state, w.skip = pwSkip, n
		switch w.field {
		case 1, 11:
			w.charge(Other, 1, CostOther)
		case 2:
			w.charge(Sample, 1, CostSample)
			w.inner, w.end, w.labeled = 2, w.off+n, false
		case 3:
			w.charge(Mapping, 1, CostMapping)
		case 4:
			w.charge(Location, 1, CostLocation)
			w.inner, w.end = 4, w.off+n
		case 5:
			w.charge(Function, 1, CostFunction)
		case 6:
			if w.Meter != nil {
				w.Meter.Add(String, 1, StringCost(n))
			}
		case 13:
			w.packed = Other
		}
		if w.inner != 0 {
			w.state, w.skip = pwKey, 0
		}
		if n == 0 {
			w.state = pwKey
			w.packed = -1
			w.inner = 0
		}
	}
	return nil
}

// innerValue takes a complete varint of a sample or a location.
func (w *PprofWalker) innerValue(v uint64) {
	switch w.state {
	case pwKey:
		w.field, w.typ = v>>3, v&7
		switch w.typ {
		case 0:
			w.state = pwVarint
			switch {
			case w.inner == 2 && w.field == 1:
				w.charge(LocationID, 1, CostLocationID)
			case w.inner == 2 && w.field == 2:
				w.charge(Value, 1, CostValue)
			}
		case 1, 5:
			w.state, w.skip = pwSkip, 8
			if w.typ == 5 {
				w.skip = 4
			}
			if w.off+w.skip > w.end {
				w.malformed()
				return
			}
		case 2:
			w.state = pwLength
		default:
			w.malformed()
			return
		}
	case pwVarint:
		w.state = pwKey
	case pwLength:
		if v > uint64(w.end-w.off) {
			w.malformed()
			return
		}
		w.state, w.skip = pwSkip, int64(v)
		switch {
		case w.inner == 2 && w.field == 1:
			w.packed = LocationID
		case w.inner == 2 && w.field == 2:
			w.packed = Value
		case w.inner == 2 && w.field == 3:
			w.charge(Label, 1, CostLabel)
			if !w.labeled {
				w.labeled = true
				w.charge(Label, 0, CostLabelMap)
			}
		case w.inner == 4 && w.field == 4:
			w.charge(Line, 1, CostLine)
		}
		if v == 0 {
			w.state = pwKey
			w.packed = -1
		}
	}
	w.pop()
}

// pop returns to the top level at the end of a sample or location.
func (w *PprofWalker) pop() {
	if w.inner != 0 && w.off >= w.end {
		if w.state != pwKey || w.shift != 0 {
			w.malformed()
			return
		}
		w.inner = 0
	}
}

// malformed skips what remains of a malformed sample or location, which
// pprof's parser refuses: nothing more is counted in it.
func (w *PprofWalker) malformed() {
	w.v, w.shift = 0, 0
	w.packed = -1
	if w.off >= w.end {
		w.inner, w.state = 0, pwKey
		return
	}
	w.state, w.skip = pwSkip, w.end-w.off
	w.inner = 0 // the skip ends the message at the top level
}

// NewPprofWalker returns a walker that refuses fields longer than limit
// (0: any) and charges m when it is not nil.
func NewPprofWalker(limit int64, m *Meter) *PprofWalker {
	return &PprofWalker{Limit: limit, Meter: m, packed: -1}
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
