package pbuild

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Units of the values a selection reads: what a table's self and total
// count. Time is always in nanoseconds.
const (
	UnitTime  = "ns"
	UnitBytes = "bytes"
	UnitCount = "count"
)

// Value is the sample value a selection reads, as `go tool pprof
// -sample_index` chooses it, and how each sample's count (the number of
// sampling events behind it, for the noise model) is read.
type Value struct {
	// Idx is the index of the value; Scale turns it into Unit (the
	// factor to nanoseconds for a time, 1 otherwise).
	Idx   int
	Scale int64
	Unit  string // UnitTime, UnitBytes or UnitCount
	// CountIdx is the index of the count value, -1 when the profile has
	// none. For a Go heap profile it is the objects of the selected pair
	// (alloc_* or inuse_*), and Heap is set: see Count.
	CountIdx int
	// Heap holds, for Go heap and allocation profiles, the index of the
	// selected pair's bytes and the sampling rate in bytes (the profile's
	// period, runtime.MemProfileRate), with which Count undoes the
	// runtime's scaling; BytesIdx is -1 otherwise.
	BytesIdx int
	Rate     int64
}

// SelectValue picks the sample value as `go tool pprof -sample_index` does
// (profile.Profile.SampleIndexByName): "" is the default type (else the last
// type), a number is an index, a name a type name, where "inuse_space" and
// "inuse_objects" also match "space" and "objects" (legacy heap profiles).
// periodUnit and period are the unit of the profile's period type and
// its period. Values that are neither a time, bytes nor a count
// are refused.
func SelectValue(types []ValueType, defaultType, sampleType string, periodUnit string, period int64) (Value, error) {
	if len(types) == 0 {
		return Value{}, fmt.Errorf("profile has no sample types")
	}
	idx := -1
	switch i, err := strconv.Atoi(sampleType); {
	case sampleType == "":
		idx = len(types) - 1
		if defaultType != "" {
			for j, st := range types {
				if st.Type == defaultType {
					idx = j
					break
				}
			}
		}
	case err == nil:
		if i < 0 || i >= len(types) {
			return Value{}, fmt.Errorf("sample index %s is outside the range [0..%d]", sampleType, len(types)-1)
		}
		idx = i
	default:
		noInuse := strings.TrimPrefix(sampleType, "inuse_")
		for j, st := range types {
			if st.Type == sampleType || st.Type == noInuse {
				idx = j
				break
			}
		}
		if idx < 0 {
			names := make([]string, len(types))
			for j, st := range types {
				names[j] = st.Type
			}
			return Value{}, fmt.Errorf("no sample type %q (have %s)", sampleType, strings.Join(names, ", "))
		}
	}
	st := types[idx]
	v := Value{Idx: idx, Scale: 1, CountIdx: -1, BytesIdx: -1}
	switch n := UnitNanos(st.Unit); {
	case n > 0:
		v.Unit, v.Scale = UnitTime, n
	case st.Unit == "" && (st.Type == "cpu" || st.Type == "wall" || st.Type == "time"):
		v.Unit = UnitTime // legacy profiles without units
	case strings.EqualFold(st.Unit, "bytes"):
		v.Unit = UnitBytes
	case strings.EqualFold(st.Unit, "count") || st.Unit == "" && (st.Type == "samples" || strings.HasSuffix(st.Type, "objects")):
		v.Unit = UnitCount
	default:
		return Value{}, fmt.Errorf("%w: %s/%s is neither a time, bytes nor a count", ErrNotTime, st.Type, st.Unit)
	}
	// A Go heap profile's pair: objects and bytes of the same kind.
	if prefix, ok := heapPrefix(st.Type); ok {
		obj, byt := find(types, prefix+"objects"), find(types, prefix+"space")
		if obj >= 0 && byt >= 0 {
			v.CountIdx, v.BytesIdx = obj, byt
			if periodUnit == "bytes" && period > 0 {
				v.Rate = period
			}
			return v, nil
		}
	}
	for i, t := range types {
		if t.Unit == "count" && i != idx {
			v.CountIdx = i
			break
		}
	}
	if v.CountIdx < 0 && v.Unit == UnitCount {
		v.CountIdx = idx // a count of events is its own count
	}
	return v, nil
}

func heapPrefix(typ string) (string, bool) {
	for _, p := range []string{"alloc_", "inuse_"} {
		if strings.HasPrefix(typ, p) && (typ == p+"objects" || typ == p+"space") {
			return p, true
		}
	}
	if typ == "objects" || typ == "space" { // legacy heap profiles
		return "", true
	}
	return "", false
}

func find(types []ValueType, name string) int {
	for i, t := range types {
		if t.Type == name {
			return i
		}
	}
	return -1
}

// Count is the number of sampling events behind a sample whose values are
// row. For a Go heap profile the runtime has scaled each stack's sampled
// objects and bytes by 1/(1-exp(-avg/rate)) (avg the mean object size,
// rate runtime.MemProfileRate) to estimate all allocations; Count undoes
// that scaling, rounded, so that a profile sampled every 512 KiB counts
// the allocations it sampled, not the millions it estimates, and a profile
// with rate 1 counts every object. Otherwise it is the count value, 0
// without one.
func (v Value) Count(row []int64) int64 {
	if v.CountIdx < 0 || v.CountIdx >= len(row) {
		return 0
	}
	objects := row[v.CountIdx]
	if v.BytesIdx < 0 || v.Rate <= 1 || objects <= 0 || v.BytesIdx >= len(row) {
		return objects
	}
	avg := float64(row[v.BytesIdx]) / float64(objects)
	if !(avg > 0) {
		return objects
	}
	n := math.Round(float64(objects) * -math.Expm1(-avg/float64(v.Rate)))
	return max(1, int64(n))
}
