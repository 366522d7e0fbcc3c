package index

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"

	"github.com/hotbudget/hotbudget/internal/membudget"
)

// testLimit is the loaders' default limit on decompressed input, which
// Decode applies.
const testLimit = 1 << 30

// Decode builds the Index of a profile in pprof's protobuf encoding,
// gzip-compressed or not, as the loaders build it for a pprof file: the
// error is a refusal of the Reader, or says that the bytes do not decode
// (profile.ParseData says why).
func Decode(data []byte) (*Index, error) {
	var r io.Reader = bytes.NewReader(data)
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		r = zr
	}
	raw, x, err := Reader{Limit: testLimit, Meter: membudget.ForLimit(testLimit), Index: true}.Read(r)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, errors.New("empty input")
	}
	if x == nil {
		return nil, errors.New("does not decode")
	}
	return x, nil
}
