package index

import (
	"slices"
	"strings"
	"unsafe"
)

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
