package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Units of Side.Unit: what the compared values count, as analysis.Table.Unit.
const (
	UnitTime  = analysis.UnitTime  // nanoseconds
	UnitBytes = analysis.UnitBytes // bytes (heap and allocation profiles)
	UnitCount = analysis.UnitCount // objects or other counted events
)

// unitOf is the unit of a report's values: the base side's, time when unset.
func unitOf(sd Side) string {
	if sd.Unit == "" {
		return UnitTime
	}
	return sd.Unit
}

// fmtValue writes a value of the report (a total, a function's self or
// total, a metric in absolute and per-op modes) in its unit.
func (r *Report) fmtValue(v float64) string { return textfmt.Value(unitOf(r.Base), v) }

// quantity names what the report's values are: "time", "bytes" or
// "objects", for "self time as share of the profile" and the headline.
func quantity(unit string) string {
	switch unit {
	case UnitBytes:
		return "bytes"
	case UnitCount:
		return "objects"
	}
	return "time"
}

// unitKeys renames, in a JSON document, every object key ending in "_ns"
// to end in "_bytes" or "_count" for a report of that unit, so that no key
// says nanoseconds of a value that is none; it returns data unchanged for
// time. The document is re-indented as WriteJSON indents it.
func unitKeys(data []byte, unit string) ([]byte, error) {
	suffix := map[string]string{UnitBytes: "_bytes", UnitCount: "_count"}[unit]
	if suffix == "" {
		return data, nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var out bytes.Buffer
	// inObject[i] says whether the i-th open container is an object, and
	// key[i] whether its next string is a key.
	var inObject, key []bool
	first := true
	sep := func() {
		if !first {
			out.WriteByte(',')
		}
		first = false
	}
	for {
		t, err := d.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			return nil, err
		}
		n := len(inObject)
		isKey := n > 0 && inObject[n-1] && key[n-1]
		switch v := t.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if !(n > 0 && inObject[n-1] && !key[n-1]) {
					sep()
				}
				out.WriteByte(byte(v))
				inObject, key = append(inObject, v == '{'), append(key, true)
				first = true
				continue
			default:
				out.WriteByte(byte(v))
				inObject, key = inObject[:n-1], key[:n-1]
				first = false
			}
		default:
			if !(n > 0 && inObject[n-1] && !key[n-1]) {
				sep()
			}
			if s, ok := v.(string); ok && isKey {
				if base, ok := strings.CutSuffix(s, "_ns"); ok {
					s = base + suffix
				}
				b, _ := json.Marshal(s)
				out.Write(b)
				out.WriteByte(':')
				key[n-1] = false
				continue
			}
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("diff: JSON value %v: %w", v, err)
			}
			out.Write(b)
		}
		if m := len(inObject); m > 0 && inObject[m-1] {
			key[m-1] = true
		}
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, out.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("diff: re-indenting the JSON report: %w", err)
	}
	ind.WriteByte('\n')
	return ind.Bytes(), nil
}
