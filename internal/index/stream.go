package index

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/hotbudget/hotbudget/internal/membudget"
)

// Reader reads a pprof Profile message (profile.proto, uncompressed) as
// its bytes arrive: it is the project's one decoder of pprof's protobuf
// encoding, used by the loaders both to check a pprof file before pprof's
// parser takes it and to build an Index straight from it.
//
// As each top-level field arrives whole, Reader checks the framing (bytes
// that are no protobuf Profile, a field longer than Limit: both refused at
// once, the error saying where) and charges Meter for what pprof's parser
// would build from the field (each string, location and line, function,
// mapping, sample and its location ids, values and labels; a malformed
// nested message, which pprof's parser refuses, stops being counted where
// it goes wrong). The Meter is checked after every read, so that a
// profile of millions of tiny elements is refused from its first
// megabytes. With Index set, the whole message, once it has passed,
// is then decoded into an Index with the same wire reader.
type Reader struct {
	Limit int64            // longest top-level field accepted; 0: any
	Meter *membudget.Meter // charged when not nil
	Index bool             // build the Index too
}

// Read reads r to its end and returns the message's bytes and, when
// rd.Index is set and the message decodes, its Index; when it does not
// (input profile.ParseData refuses, a profile too large for the Index's
// int32 ids), the Index is nil and the caller has pprof's parser say
// what is wrong. The error is a refusal (framing, Limit, Meter) or r's.
//
// The bytes are read into chunks that each end with a whole field, so
// that every field is checked and charged where it lies and nothing but
// the field in progress is copied while the chunks grow; they are joined
// once at the end. A field is charged when it has arrived whole, never
// on the length it claims, so a long string is not counted before it is
// read and a claim that the input does not back costs nothing.
func (rd Reader) Read(r io.Reader) ([]byte, *Index, error) {
	s := scanner{limit: rd.Limit, meter: rd.Meter}
	size := 64 << 10
	buf := make([]byte, size)
	var chunks [][]byte
	n, pos := 0, 0 // buf[:n] read, buf[:pos] whole fields
	var base int64 // offset of buf[0] in the message
	for {
		if n == len(buf) {
			// A new chunk takes the field in progress, at twice its
			// size if it is large, so that a long field is copied a
			// bounded number of times; its claimed length is not
			// trusted for the allocation.
			tail := n - pos
			size = min(2*size, 64<<20)
			next := make([]byte, max(size, 2*tail))
			copy(next, buf[pos:n])
			chunks = append(chunks, buf[:pos])
			base += int64(pos)
			buf, n, pos = next, tail, 0
		}
		m, rerr := r.Read(buf[n:])
		n += m
		adv, err := s.scan(buf[pos:n], base+int64(pos))
		pos += adv
		if err != nil {
			return nil, nil, err
		}
		if s.meter != nil && m > 0 {
			if err := s.meter.Read(m); err != nil {
				return nil, nil, err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, nil, rerr
		}
	}
	data := buf[:n]
	if len(chunks) > 0 {
		total := base + int64(n)
		data = make([]byte, 0, total)
		for i, c := range chunks {
			data = append(data, c...)
			chunks[i] = nil
		}
		data = append(data, buf[:n]...)
	}
	if !rd.Index || pos < n {
		return data, nil, nil
	}
	// The Index is decoded once the whole message has passed the checks
	// and the budget, so that what is refused never takes its memory.
	x, err := decode(data)
	if err != nil {
		return data, nil, nil
	}
	return data, x, nil
}

// decode decodes a whole Profile message, whose framing the scanner
// checked, into an Index.
func decode(data []byte) (*Index, error) {
	if uint64(len(data)) > math.MaxUint32 {
		return nil, errTooLarge
	}
	d := new(decoder)
	for b := data; len(b) > 0; {
		num, typ, u, fd, rest, err := field(b)
		if err != nil {
			return nil, err
		}
		if err := d.topField(num, typ, u, fd, uint32(len(data)-len(fd)-len(rest))); err != nil {
			return nil, err
		}
		b = rest
	}
	return d.finish(data)
}

// LooksLikeProfile reports whether head, the first bytes of a file,
// reads as the top-level fields of a pprof Profile message: at least one
// field begins, and nothing seen is wrong.
func LooksLikeProfile(head []byte) bool {
	var s scanner
	_, err := s.scan(head, 0)
	return err == nil && s.fields > 0
}

// scanner follows the top-level fields of a Profile message.
type scanner struct {
	limit  int64
	meter  *membudget.Meter
	fields int // top-level keys read

	// The field whose key was read but which is not whole yet: its key
	// is counted once.
	keyedAt int64
}

// profileWireTypes are the wire types pprof's decoder accepts for the
// Profile message's fields (profile.proto): 2 for messages and strings, 0
// for integers, both for the packed repeated comment field.
var profileWireTypes = [16][]int{
	1: {2}, 2: {2}, 3: {2}, 4: {2}, 5: {2}, 6: {2}, 11: {2},
	7: {0}, 8: {0}, 9: {0}, 10: {0}, 12: {0}, 14: {0}, 15: {0},
	13: {0, 2},
}

func notProfile(off int64, format string, args ...any) error {
	return fmt.Errorf("not a pprof protobuf: at offset %d: %s", off, fmt.Sprintf(format, args...))
}

// topVarint reads a varint of the Profile message at the start of b (at
// offset off): its value and size, or size 0 when b ends first. A tenth
// byte above 1 (a value beyond 64 bits) is refused.
func topVarint(b []byte, off int64) (uint64, int, error) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1, nil
	}
	var v uint64
	for i, c := range b {
		if i == 9 && c > 1 {
			return 0, 0, notProfile(off+9, "varint too long")
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, nil
}

// scan reads the whole top-level fields at the start of b, the message
// from offset off on, and checks what b holds of the next one. It returns
// how many bytes the whole fields take.
func (s *scanner) scan(b []byte, off int64) (int, error) {
	done := 0
	for done < len(b) {
		at := off + int64(done)
		rest := b[done:]
		key, kn, err := topVarint(rest, at)
		if err != nil || kn == 0 {
			return done, err
		}
		num, typ := key>>3, int(key&7)
		if s.keyedAt != at+1 { // counted once, however often the field is scanned
			if num == 0 {
				return done, notProfile(at+int64(kn), "field number 0")
			}
			if num < uint64(len(profileWireTypes)) && profileWireTypes[num] != nil && !slices.Contains(profileWireTypes[num], typ) ||
				typ != wireVarint && typ != wire64 && typ != wireBytes && typ != wire32 {
				return done, notProfile(at+int64(kn), "field %d with wire type %d", num, typ)
			}
			s.fields++
			s.keyedAt = at + 1
		}
		body := rest[kn:]
		var fd []byte
		var size int
		switch typ {
		case wireVarint:
			_, n, err := topVarint(body, at+int64(kn))
			if err != nil || n == 0 {
				return done, err
			}
			size = kn + n
		case wire64, wire32:
			w := 8
			if typ == wire32 {
				w = 4
			}
			if len(body) < w {
				return done, nil
			}
			size = kn + w
		case wireBytes:
			l, n, err := topVarint(body, at+int64(kn))
			if err != nil || n == 0 {
				return done, err
			}
			if s.limit > 0 && l > uint64(s.limit) {
				return done, fmt.Errorf("%w: field %d at offset %d is %d bytes long, more than the limit of %s",
					membudget.ErrTooLarge, num, at+int64(kn+n), l, membudget.SizeString(s.limit))
			}
			if l > uint64(len(body)-n) {
				return done, nil
			}
			fd = body[n : n+int(l)]
			size = kn + n + int(l)
		}
		s.keyedAt = 0
		if s.meter != nil {
			charge(s.meter, int(num), typ, fd)
		}
		done += size
	}
	return done, nil
}

// charge charges m for what pprof's parser builds from a whole top-level
// field: fd is its bytes (nil for a varint).
func charge(m *membudget.Meter, num, typ int, fd []byte) {
	switch num {
	case 1, 11:
		if typ == wireBytes {
			m.Add(membudget.Other, 1, membudget.CostOther)
		}
	case 2:
		m.Add(membudget.Sample, 1, membudget.CostSample)
		chargeSample(m, fd)
	case 3:
		m.Add(membudget.Mapping, 1, membudget.CostMapping)
	case 4:
		m.Add(membudget.Location, 1, membudget.CostLocation)
		chargeLocation(m, fd)
	case 5:
		m.Add(membudget.Function, 1, membudget.CostFunction)
	case 6:
		m.Add(membudget.String, 1, membudget.StringCost(int64(len(fd))))
	case 13:
		if typ == wireVarint {
			m.Add(membudget.Other, 1, membudget.CostOther)
		} else {
			chargePacked(m, membudget.Other, membudget.CostOther, fd)
		}
	}
}

// chargePacked charges one element of kind k per varint in fd, a packed
// repeated field (a varint cut by the end of fd included).
func chargePacked(m *membudget.Meter, k membudget.Kind, cost int64, fd []byte) {
	c := int64(0)
	for _, x := range fd {
		if x < 0x80 {
			c++
		}
	}
	m.Add(k, c, c*cost)
}

// chargeSample charges a sample's location ids, values and labels.
func chargeSample(m *membudget.Meter, b []byte) {
	labeled := false
	for len(b) > 0 {
		num, typ, _, fd, rest, err := field(b)
		if err != nil {
			return
		}
		b = rest
		switch {
		case num == 1 && typ == wireVarint:
			m.Add(membudget.LocationID, 1, membudget.CostLocationID)
		case num == 1 && typ == wireBytes:
			chargePacked(m, membudget.LocationID, membudget.CostLocationID, fd)
		case num == 2 && typ == wireVarint:
			m.Add(membudget.Value, 1, membudget.CostValue)
		case num == 2 && typ == wireBytes:
			chargePacked(m, membudget.Value, membudget.CostValue, fd)
		case num == 3 && typ == wireBytes:
			m.Add(membudget.Label, 1, membudget.CostLabel)
			if !labeled {
				labeled = true
				m.Add(membudget.Label, 0, membudget.CostLabelMap)
			}
		}
	}
}

// chargeLocation charges a location's lines.
func chargeLocation(m *membudget.Meter, b []byte) {
	for len(b) > 0 {
		num, typ, _, _, rest, err := field(b)
		if err != nil {
			return
		}
		b = rest
		if num == 4 && typ == wireBytes {
			m.Add(membudget.Line, 1, membudget.CostLine)
		}
	}
}
