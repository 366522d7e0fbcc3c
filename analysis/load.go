package analysis

import (
	"os"

	"github.com/hotbudget/hotbudget/loaders"
)

// LoadIndex reads the profile in the file at path, in any format the
// loaders package reads, and indexes it. Go profiles in pprof's protobuf
// encoding take the fast path of ParseIndex; every other input, and any
// pprof file ParseIndex refuses, goes through loaders.Load and NewIndex, so
// the result and the errors are those of
//
//	p, err := loaders.Load(path, opts...)
//	x, err := NewIndex(p)
//
// only faster.
func LoadIndex(path string, opts ...loaders.Option) (*Index, error) {
	if f, err := loaders.DetectFile(path, opts...); err == nil && f == loaders.FormatPprof {
		if data, err := os.ReadFile(path); err == nil {
			if x, err := ParseIndex(data); err == nil {
				return x, nil
			}
		}
	}
	p, err := loaders.Load(path, opts...)
	if err != nil {
		return nil, err
	}
	return NewIndex(p)
}
