// Package folded reads and writes folded (collapsed) stacks, the text format
// of Brendan Gregg's stackcollapse scripts, flamegraph.pl, inferno and
// speedscope's "folded" import:
//
//	main;handler;parse 42
//	main;handler;render 7
//
// Each line is a stack, root first, with frames joined by ';', then
// whitespace and a sample count. Frames may contain spaces: the count is the
// last whitespace-separated field. Blank lines and lines starting with '#'
// are skipped.
//
// Decisions (pinned by tests):
//
//   - The number is a sample count, as flame-graph tools treat it. The format
//     carries no sampling rate, so each sample is taken to last SampleNanos
//     (1 ms): a line "a;b 42" becomes 42 samples and 42 ms, Period is 1 ms, and
//     the profile carries a warning saying so. Counts then read directly as
//     milliseconds in `hotbudget top`, and two folded files compare fairly.
//   - Identical stacks on several lines are summed. A count of 0 adds nothing.
//   - A line without a count, with a count that is not a non-negative
//     integer, with no stack or with an empty frame is an error naming the
//     line number. Lines are bounded by MaxLineBytes.
//   - Frames are functions by name only (no file or line); "[unknown]" and
//     annotations such as "_[k]" are kept verbatim.
//
// Write writes one line per distinct stack, sorted; see Write.
package folded

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// SampleNanos is the time one folded sample stands for: 1 ms.
const SampleNanos = int64(1e6)

// MaxLineBytes bounds the length of one line.
const MaxLineBytes = 16 << 20

// Parse reads folded stacks. See the package documentation.
func Parse(r io.Reader, o pbuild.Options) (*profile.Profile, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	b := pbuild.New(pbuild.Sampled)
	b.SetMeter(o.Meter)
	locs := make(map[string]*profile.Location)
	var stack []*profile.Location
	var total int64
	lineNo := 0
	lines := 0
	for sc.Scan() {
		lineNo++
		line := bytes.TrimRight(sc.Bytes(), " \t\r")
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		lines++
		i := bytes.LastIndexAny(line, " \t")
		if i < 0 {
			return nil, fmt.Errorf("line %d: %q: no count (want \"frame;frame;... count\")", lineNo, truncate(line))
		}
		n, err := strconv.ParseInt(string(line[i+1:]), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("line %d: count %q is not a non-negative integer", lineNo, truncate(line[i+1:]))
		}
		st := bytes.TrimRight(line[:i], " \t\r")
		if len(st) == 0 {
			return nil, fmt.Errorf("line %d: no stack before the count", lineNo)
		}
		if n > (math.MaxInt64-total)/SampleNanos {
			return nil, fmt.Errorf("line %d: count %d makes the total time overflow int64 nanoseconds", lineNo, n)
		}
		// Frames are found root first; the builder wants the leaf first.
		stack = stack[:0]
		for fi := 0; len(st) > 0; fi++ {
			j := bytes.IndexByte(st, ';')
			var name []byte
			if j < 0 {
				name, st = st, nil
			} else {
				name, st = st[:j], st[j+1:]
				if len(st) == 0 {
					return nil, fmt.Errorf("line %d: frame %d is empty", lineNo, fi+1)
				}
			}
			if len(name) == 0 {
				return nil, fmt.Errorf("line %d: frame %d is empty", lineNo, fi)
			}
			l, ok := locs[string(name)]
			if !ok {
				s := string(name)
				l = b.Location(pbuild.Frame{Name: s})
				locs[s] = l
			}
			stack = append(stack, l)
		}
		if n == 0 {
			continue
		}
		for x, y := 0, len(stack)-1; x < y; x, y = x+1, y-1 {
			stack[x], stack[y] = stack[y], stack[x]
		}
		total += n * SampleNanos
		b.Add(stack, n, n*SampleNanos, nil)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d bytes: %w", lineNo+1, MaxLineBytes, err)
		}
		return nil, fmt.Errorf("line %d: %w", lineNo+1, err)
	}
	if lines == 0 {
		return nil, errors.New("no stacks")
	}
	b.Warnf("folded stacks hold sample counts only: each sample taken as %gms", float64(SampleNanos)/1e6)
	return b.Finish("folded", SampleNanos, total)
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// Write writes p as folded stacks: one line per distinct stack, root first,
// function names joined by ';', then a space and the sample count; lines are
// sorted by stack. Every Line of a Location is a frame (Line[0] innermost);
// locations without functions are named as analysis names them.
//
// Names are written so that Parse reads back what Write wrote, and Write
// of that writes the same bytes (see Frame): ';' becomes ':', control
// characters, line and paragraph separators, bidirectional controls and
// invalid UTF-8 are escaped as \n, \r, \t, \xHH or \uHHHH, trailing spaces
// (which Parse trims) as \x20, and a '#' that starts a line (a comment to
// Parse) as \x23. The escapes are not undone on reading: a name holding
// them is read as written.
//
// The count is the profile's count value (samples/count). A profile without
// one gets its time value in units of SampleNanos, rounded, so that Parse
// reads the same time back; one whose value is a count and no time
// (instructions counted exactly, objects) that count. Samples with an empty stack or a count of 0 are
// left out, since the format cannot hold them; so are negative counts.
// p is not modified.
func Write(w io.Writer, p *profile.Profile) error {
	ti, ci, toNanos, err := pbuild.ValueIndex(p, "")
	if errors.Is(err, pbuild.ErrNotTime) {
		// A count (instructions counted exactly, objects) is written
		// as it is.
		if i, ok := pbuild.CountIndex(p); ok {
			ti, ci, err = i, i, nil
		}
	}
	if err != nil {
		return err
	}
	counts := make(map[string]int64)
	var names []string
	var sb strings.Builder
	for si, s := range p.Sample {
		var n int64
		if ci >= 0 {
			if ci >= len(s.Value) {
				return fmt.Errorf("sample %d has %d values, want at least %d", si, len(s.Value), ci+1)
			}
			n = s.Value[ci]
		} else {
			if ti >= len(s.Value) {
				return fmt.Errorf("sample %d has %d values, want at least %d", si, len(s.Value), ti+1)
			}
			n = int64(math.Round(float64(s.Value[ti]) * float64(toNanos) / float64(SampleNanos)))
		}
		if n <= 0 {
			continue
		}
		names = pbuild.FrameNames(names[:0], s)
		if len(names) == 0 {
			continue
		}
		sb.Reset()
		for i := len(names) - 1; i >= 0; i-- {
			sb.WriteString(Frame(names[i], i == len(names)-1))
			if i > 0 {
				sb.WriteByte(';')
			}
		}
		k := sb.String()
		if counts[k] > math.MaxInt64-n {
			return fmt.Errorf("sample %d: count for stack %q overflows", si, k)
		}
		counts[k] += n
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bw := bufio.NewWriter(w)
	var buf []byte
	for _, k := range keys {
		buf = append(buf[:0], k...)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, counts[k], 10)
		buf = append(buf, '\n')
		bw.Write(buf)
	}
	return bw.Flush()
}

// Frame is name as Write writes it, in the root position when root is
// set: a frame Parse reads back unchanged, and which Frame leaves
// unchanged. See Write.
func Frame(name string, root bool) string {
	if frameSafe(name, root) {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, name[i])
		case r == ';':
			b.WriteByte(':')
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case escapedRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		case r == '#' && i == 0 && root:
			b.WriteString(`\x23`)
		default:
			b.WriteString(name[i : i+size])
		}
		i += size
	}
	out := b.String()
	if t := strings.TrimRight(out, " "); len(t) < len(out) {
		out = t + strings.Repeat(`\x20`, len(out)-len(t))
	}
	return out
}

// frameSafe reports whether Frame leaves name as it is.
func frameSafe(name string, root bool) bool {
	if name == "" {
		return true
	}
	if name[len(name)-1] == ' ' || root && name[0] == '#' {
		return false
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == ';' || r == utf8.RuneError || escapedRune(r) {
			return false
		}
	}
	return true
}

// escapedRune reports whether Frame escapes r as \uHHHH: C1 controls, line
// and paragraph separators, and bidirectional controls, which change how
// a terminal or an editor shows the text around them.
func escapedRune(r rune) bool {
	return r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Bidi_Control, r)
}
