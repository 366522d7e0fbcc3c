package index

import (
	"encoding/binary"
	"errors"
	"fmt"
)

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
