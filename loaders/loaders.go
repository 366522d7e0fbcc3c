// Package loaders reads CPU profiles and traces of every common format into
// one model, *profile.Profile from github.com/google/pprof/profile, and writes
// them back out.
//
// The format is detected from the content, never from the file name, and
// gzip-compressed input is decompressed transparently. Supported formats:
//
//   - Go pprof (protobuf, gzipped or not, and pprof's legacy formats);
//   - V8 / Node.js .cpuprofile JSON (modern and legacy layouts);
//   - V8 / Node.js sampling heap profiles (.heapprofile, node --heap-prof,
//     DevTools' "Allocation sampling"): bytes and sampled allocations per
//     stack, as sample types space/bytes and samples/count;
//   - Chrome trace-event JSON: streamed Profile/ProfileChunk CPU samples,
//     the old CpuProfile event, and X/B/E duration events per thread;
//   - speedscope JSON (evented and sampled profiles);
//   - folded stacks ("a;b;c 42" lines);
//   - Go execution traces (runtime/trace, go test -trace);
//   - valgrind callgrind output (callgrind.out.<pid>): one sample type
//     per event, counts (Ir as instructions/count, the default), exact,
//     self and total per function as callgrind_annotate --inclusive=yes
//     prints them for functions on no call cycle.
//
// Every profile returned passes CheckValid, and its sample values are never
// negative and add up, per sample type, to at most the largest int64 (in
// nanoseconds, for a time): a profile with a negative value (such as a
// pprof -diff_base profile) or whose sums would overflow is refused, naming
// the sample. Sampled data has the sample types
// samples/count and cpu/nanoseconds; exact data (duration events, trace
// regions) has events/count and wall/nanoseconds, and its analysis.Table is
// Exact.
// Heap profiles keep their own types: a Go heap or allocation profile its
// alloc_objects, alloc_space, inuse_objects and inuse_space, a V8 sampling
// heap profile samples/count and space/bytes (the default); package
// analysis reads them as bytes and objects.
// Repairs and dropped data are reported by Warnings, never silently. Samples
// carry string labels "pid", "tid", "process", "thread" and "profile" where the
// format knows them, so a caller can select a thread or process.
//
// LoadIndex and ReadIndex read a profile into an analysis.Index instead, for
// callers that want tables rather than a profile to modify: the same
// detection, limits, options and errors, and a Go profile in pprof's
// protobuf encoding decoded straight into the Index without a
// *profile.Profile (faster than Load followed by analysis.NewIndex, which
// give the same Index, with a sixth of the allocations).
//
// Input that is no profile is refused from its first bytes, with an error
// that says what was found ("only whitespace in the first 64 KiB", "starts
// with bytes 0x00 0x01 ...: not a profile"). Gzip may be nested up to four
// layers deep (a pprof file gzipped once more by a tool is common).
//
// # Memory
//
// Read takes in at most 1 GiB of input after
// decompression and refuses larger input with an error wrapping
// ErrTooLarge. What a loader builds is charged, as the input arrives, for
// the memory it takes (strings, locations, lines and samples of a pprof
// file; nodes, frames and samples of the others), and input whose parse
// would take more than 24 bytes per byte of input (ordinary profiles take
// 7 to 14), or more than half the limit besides the input, is refused with
// ErrTooLarge too, naming what there is too much of, before the memory is
// taken: a pprof file of millions of empty strings or locations, a few
// bytes each, stops within its first megabytes. The JSON, folded and trace
// loaders read their input as a stream, a node, event or line at a time, so
// their memory follows the profile they build, not the file (white space is
// skipped, and one value is held whole only up to the limit); pprof's
// parser, like LoadIndex's decoder, needs the whole decompressed file in
// memory, so a pprof file is read up to the limit, and a protobuf field
// that claims more than the limit, bytes that are no protobuf, or a legacy
// text profile's line longer than pprof reads, are refused as soon as they
// are seen. The environment variable HOTBUDGET_MAX_BYTES sets another
// default for every program using this package, the hotbudget command
// included: a number of bytes, optionally with a suffix KiB, MiB, GiB or
// TiB ("2GiB"), or 0 for no limit. WithMaxBytes sets the limit for one call
// and wins over both, for Load and LoadIndex alike.
//
// The decisions taken where reference tools disagree are recorded in the
// project's FORMATS.md and pinned by tests.
package loaders

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/pprof/profile"

	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/internal/callgrind"
	"github.com/hotbudget/hotbudget/internal/chrometrace"
	"github.com/hotbudget/hotbudget/internal/folded"
	"github.com/hotbudget/hotbudget/internal/gotrace"
	"github.com/hotbudget/hotbudget/internal/index"
	"github.com/hotbudget/hotbudget/internal/indexload"
	"github.com/hotbudget/hotbudget/internal/jsonscan"
	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/meta"
	"github.com/hotbudget/hotbudget/internal/pbuild"
	"github.com/hotbudget/hotbudget/internal/speedscope"
	v8 "github.com/hotbudget/hotbudget/internal/v8"
)

// Format names a profile file format.
type Format string

// The formats Load reads. Writers exist for FormatPprof, FormatSpeedscope and FormatFolded.
const (
	FormatUnknown     Format = ""
	FormatPprof       Format = "pprof"
	FormatCPUProfile  Format = "cpuprofile"
	FormatHeapProfile Format = "heapprofile"
	FormatChromeTrace Format = "chrome-trace"
	FormatSpeedscope  Format = "speedscope"
	FormatFolded      Format = "folded"
	FormatGoTrace     Format = "go-trace"
	FormatCallgrind   Format = "callgrind"
)

// View selects what a Chrome trace with both CPU samples and duration events contributes.
type View string

// Views. Without WithView (or with View("")) a trace's CPU samples are
// taken when it has any (they cover all JavaScript, and mixing both would
// count time twice) and its duration events otherwise.
const (
	ViewSamples   View = pbuild.ViewSamples
	ViewDurations View = pbuild.ViewDurations
)

// An Option changes how a profile is read.
type Option interface{ apply(*config) }

type config struct {
	format   Format
	view     View
	name     string
	maxBytes int64 // 0: not set by WithMaxBytes
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithFormat skips detection and reads the input as f.
func WithFormat(f Format) Option { return optionFunc(func(c *config) { c.format = f }) }

// WithView selects samples or duration events from a Chrome trace.
func WithView(v View) Option { return optionFunc(func(c *config) { c.view = v }) }

// WithName names the input in errors and supplies the file name for metadata
// (Node's CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile). Load sets it to the path.
func WithName(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

// WithMaxBytes sets how many bytes of input, after decompression, Read takes
// in before it refuses the input with an error wrapping ErrTooLarge. n <= 0
// removes the limit. Without this option the limit is 1 GiB, or
// HOTBUDGET_MAX_BYTES when that is set.
func WithMaxBytes(n int64) Option {
	return optionFunc(func(c *config) {
		if n <= 0 {
			n = -1
		}
		c.maxBytes = n
	})
}

// Load reads the profile in the file at path.
func Load(path string, opts ...Option) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, append([]Option{WithName(path)}, opts...)...)
}

// peekSize is how much of the input detection looks at.
const peekSize = 64 << 10

// maxGzipLayers is how deeply gzip may be nested: a pprof file gzipped
// again by a tool is common, four layers are not.
const maxGzipLayers = 4

// Read reads a profile from r. Errors start with the name given by WithName
// (or "input") and say what is wrong and where.
func Read(r io.Reader, opts ...Option) (*profile.Profile, error) {
	p, _, err := readAs(r, opts, false)
	return p, err
}

// LoadIndex reads the profile in the file at path into an
// analysis.Index: it is the one way from a file to an Index, for callers
// that want tables rather than a *profile.Profile (the hotbudget command's
// diff and top read every profile with it, perfassert.MatchBaseline its
// baselines). Detection, the limits
// (WithMaxBytes, HOTBUDGET_MAX_BYTES), the memory budget, the other
// options and the errors, naming the file and what is wrong, are Load's,
// and the file is read once. A Go profile in pprof's protobuf encoding is
// decoded straight into the Index without a *profile.Profile, faster than
// Load followed by analysis.NewIndex, which give the same Index, and with
// a sixth of the allocations; every other input goes through its loader
// and NewIndex. The
// loader's warnings are kept (analysis.Index.Warnings).
//
// It lives here, beside Load, rather than in package analysis: it is
// Load's twin, with the same options and the same reader, and analysis
// computes tables from profiles without knowing files or formats.
func LoadIndex(path string, opts ...Option) (*analysis.Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadIndex(f, append([]Option{WithName(path)}, opts...)...)
}

// ReadIndex is LoadIndex for a profile read from r, as Read reads it.
func ReadIndex(r io.Reader, opts ...Option) (*analysis.Index, error) {
	_, x, err := readAs(r, opts, true)
	if err != nil {
		return nil, err
	}
	return (*analysis.Index)(indexload.New(x)), nil
}

// readAs is Read, and with asIndex ReadIndex: the profile comes back as an
// index, and a pprof protobuf is decoded straight into it (the index of
// the profile Read would return, as the tests of package index hold it)
// without a *profile.Profile, pprof's parser running only to say what is
// wrong with a file the decoder does not take. Detection, the limits, the
// memory budget and every error are Read's, and the input is read once.
func readAs(r io.Reader, opts []Option, asIndex bool) (*profile.Profile, *index.Index, error) {
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	name := c.name
	if name == "" {
		name = "input"
	}
	p, x, err := read(r, &c, asIndex)
	if err == nil && asIndex && x == nil {
		if x, err = index.FromProfile(p); err == nil {
			err = x.CheckValues()
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, x, nil
}

func read(r io.Reader, c *config, asIndex bool) (*profile.Profile, *index.Index, error) {
	limit, err := c.limit()
	if err != nil {
		return nil, nil, err
	}
	br, head, f, done, err := sniff(r, c)
	defer done()
	if err != nil {
		return nil, nil, err
	}
	lr := &limitReader{r: br, left: limit, limit: limit}
	o := pbuild.Options{Name: c.name, View: string(c.view)}
	if f != FormatPprof { // readPprof charges its own
		lr.meter = membudget.ForLimit(limit)
		o.Meter = lr.meter
	}
	var p *profile.Profile
	var x *index.Index
	switch f {
	case FormatPprof:
		p, x, err = readPprof(lr, head, asIndex)
	case FormatCPUProfile:
		p, err = v8.Parse(lr, o)
	case FormatHeapProfile:
		p, err = v8.ParseHeap(lr, o)
	case FormatChromeTrace:
		p, err = chrometrace.Parse(lr, o)
	case FormatSpeedscope:
		p, err = speedscope.Parse(lr, o)
	case FormatFolded:
		p, err = folded.Parse(lr, o)
	case FormatGoTrace:
		p, err = gotrace.Parse(lr, o)
	case FormatCallgrind:
		p, err = callgrind.Parse(lr, o)
	default:
		return nil, nil, fmt.Errorf("unknown format %q", f)
	}
	if lr.over {
		// Whatever the parser made of the cut input, the input was too
		// large; a parser that accepts truncated files must not succeed.
		return nil, nil, lr.err()
	}
	if lr.meter != nil && lr.meter.Err() != nil {
		// The parse would take too much memory: the read was stopped.
		return nil, nil, fmt.Errorf("%s: %w; raise the limit with %s or loaders.WithMaxBytes (0: none)", f, lr.meter.Err(), maxBytesEnv)
	}
	if err == nil {
		// Every format is held to the one rule on sample values: none
		// negative, and no total past int64.
		if x != nil {
			err = x.CheckValues()
		} else {
			err = pbuild.CheckValues(p)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f, err)
	}
	return p, x, nil
}

// peek returns up to peekSize bytes of br without consuming them.
func peek(br *bufio.Reader) ([]byte, error) {
	head, err := br.Peek(peekSize)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	return head, nil
}

func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// sniff unwraps r's gzip layers and returns a reader of the decompressed
// content, its first bytes, its format (as forced by c or detected: what is
// no profile is an error naming what was found), and a function that
// releases the decompressors. Nothing beyond the first bytes is buffered.
func sniff(r io.Reader, c *config) (*bufio.Reader, []byte, Format, func(), error) {
	var closers []io.Closer
	done := func() {
		for _, z := range closers {
			z.Close()
		}
	}
	br := bufio.NewReaderSize(r, peekSize)
	head, err := peek(br)
	if err != nil {
		return nil, nil, "", done, err
	}
	if len(head) == 0 {
		return nil, nil, "", done, errors.New("empty file")
	}
	// Detection looks at the decompressed stream: each gzip layer is
	// unwrapped before anything is buffered.
	for layers := 0; isGzip(head); layers++ {
		if layers == maxGzipLayers {
			return nil, nil, "", done, fmt.Errorf("gzip nested more than %d deep: not a profile", maxGzipLayers)
		}
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, "", done, fmt.Errorf("gzip: %w", err)
		}
		closers = append(closers, zr)
		br = bufio.NewReaderSize(&gzipErrReader{zr}, peekSize)
		if head, err = peek(br); err != nil {
			return nil, nil, "", done, err
		}
		if len(head) == 0 {
			return nil, nil, "", done, errors.New("empty file after gzip decompression")
		}
	}
	f := c.format
	if f == FormatUnknown {
		if f = Detect(head); f == FormatUnknown {
			return nil, nil, "", done, errors.New(describe(head))
		}
	}
	return br, head, f, done, nil
}

// DetectFile returns the format Load would read the file at path as: the
// one WithFormat forces, else the one Detect finds in its first bytes,
// after gzip decompression.
func DetectFile(path string, opts ...Option) (Format, error) {
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	file, err := os.Open(path)
	if err != nil {
		return FormatUnknown, err
	}
	defer file.Close()
	_, _, f, done, err := sniff(file, &c)
	done()
	if err != nil {
		return FormatUnknown, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// gzipErrReader names gzip errors so that a truncated file says so.
type gzipErrReader struct{ r io.Reader }

func (g *gzipErrReader) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("gzip: truncated input: %w", err)
		} else {
			err = fmt.Errorf("gzip: %w", err)
		}
	}
	return n, err
}

// readPprof reads a pprof file (gzip already removed) whole, as pprof's
// parser needs it; r is limited. The bytes are checked as they are read,
// so that what is no profile stops the read at once: a protobuf's
// top-level fields (bytes that are no protobuf, or a field longer than the
// limit), or the lines of pprof's legacy text formats.
//
// A protobuf is also charged, as it is read, for the memory pprof's parser
// will take (membudget): unless the limit is off, more than
// membudget.Ratio bytes per byte of input, or more than half the limit
// besides the input, is refused before the parser runs. With asIndex, a
// protobuf is decoded into an Index instead of a *profile.Profile when
// the decoder takes it; pprof's parser reads what it does not, and the
// legacy formats.
func readPprof(r *limitReader, head []byte, asIndex bool) (*profile.Profile, *index.Index, error) {
	var data []byte
	var err error
	switch {
	case index.LooksLikeProfile(head):
		var x *index.Index
		data, x, err = index.Reader{Limit: r.limit, Meter: membudget.ForLimit(r.limit), Index: asIndex}.Read(r)
		if err == nil && x != nil {
			return nil, x, nil
		}
	case looksLegacyText(head):
		data, err = readAll(&checkReader{r: r, c: &lineChecker{}})
	default:
		data, err = readAll(r)
	}
	if errors.Is(err, ErrTooLarge) && !r.over {
		return nil, nil, fmt.Errorf("%w; raise the limit with %s or loaders.WithMaxBytes (0: none)", err, maxBytesEnv)
	}
	if err != nil {
		return nil, nil, err
	}
	p, err := profile.ParseData(data)
	if err != nil {
		return nil, nil, err
	}
	if err := p.CheckValid(); err != nil {
		return nil, nil, err
	}
	return p, nil, nil
}

// readAll reads r to the end in chunks that are never copied while they
// grow, so that the memory held is what was read (io.ReadAll's growing
// slice holds up to twice that), and joins them once at the end.
func readAll(r io.Reader) ([]byte, error) {
	var chunks [][]byte
	size, total := 64<<10, 0
	for {
		buf := make([]byte, size)
		n, err := io.ReadFull(r, buf)
		total += n
		chunks = append(chunks, buf[:n])
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
		size = min(2*size, 64<<20)
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	data := make([]byte, 0, total)
	for i, c := range chunks {
		data = append(data, c...)
		chunks[i] = nil
	}
	return data, nil
}

// Detect tells the format of a profile from its first bytes (already
// decompressed; Read looks at 64 KiB). It returns FormatUnknown for input
// that is no profile: only white space, or bytes that are neither JSON,
// folded stacks, a Go trace, callgrind output, a pprof protobuf nor one of
// pprof's legacy formats.
func Detect(head []byte) Format {
	b := bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return FormatUnknown
	}
	if bytes.HasPrefix(b, []byte("go 1.")) && bytes.Contains(b[:min(len(b), 16)], []byte(" trace")) {
		return FormatGoTrace
	}
	switch b[0] {
	case '[':
		return FormatChromeTrace
	case '{':
		return detectJSON(b)
	}
	if callgrind.Looks(b) {
		return FormatCallgrind
	}
	if looksLegacyText(b) {
		return FormatPprof
	}
	if looksFolded(b, len(head) >= peekSize) {
		return FormatFolded
	}
	if index.LooksLikeProfile(head) || looksLegacyCPU(head) {
		return FormatPprof
	}
	return FormatUnknown
}

// detectJSON decides by the top-level keys of a JSON object.
func detectJSON(b []byte) Format {
	d := json.NewDecoder(bytes.NewReader(b))
	if _, err := d.Token(); err != nil {
		return FormatUnknown
	}
	sawSamples := false
	for d.More() {
		t, err := d.Token()
		if err != nil {
			break
		}
		key, _ := t.(string)
		switch key {
		case "$schema", "shared", "profiles", "activeProfileIndex", "exporter":
			return FormatSpeedscope
		case "head":
			// A sampling heap profile's nodes have selfSize, a legacy
			// CPU profile's hitCount.
			return headFormat(d)
		case "nodes", "timeDeltas", "timestamps":
			return FormatCPUProfile
		case "traceEvents", "displayTimeUnit", "systemTraceEvents", "stackFrames", "otherData":
			return FormatChromeTrace
		case "samples":
			sawSamples = true
		}
		if err := jsonscan.SkipTokens(d.Token); err != nil {
			break
		}
	}
	if sawSamples {
		return FormatCPUProfile
	}
	// A JSON object we cannot place within the window: the cpuprofile
	// parser gives the most useful error for objects.
	return FormatCPUProfile
}

// headFormat reads the keys of the "head" object d is at and tells a V8
// sampling heap profile (selfSize) from a legacy CPU profile.
func headFormat(d *json.Decoder) Format {
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return FormatCPUProfile
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			break
		}
		switch t {
		case "selfSize":
			return FormatHeapProfile
		case "hitCount", "functionName", "callUID":
			return FormatCPUProfile
		}
		if err := jsonscan.SkipTokens(d.Token); err != nil {
			break
		}
	}
	return FormatCPUProfile
}

// looksFolded reports whether the first non-empty line is "stack count".
// When b fills the detection window (full), a line that runs to its end
// may be longer than the window, its count beyond it: a deep stack of long
// names. It is taken as folded when it is text (no control byte but tab
// and CR), and the parser judges the whole line.
func looksFolded(b []byte, full bool) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return false
	}
	lines := bytes.SplitN(b, []byte("\n"), 8)
	for i, line := range lines {
		if full && i == len(lines)-1 && bytes.IndexByte(line, '\n') < 0 {
			return isText(line)
		}
		line = bytes.TrimRight(line, "\r \t")
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		i := bytes.LastIndexAny(line, " \t")
		if i <= 0 {
			return false
		}
		for _, c := range line[i+1:] {
			if c < '0' || c > '9' {
				return false
			}
		}
		return len(line) > i+1
	}
	return false
}

// isText reports whether b holds no control byte but tab and CR.
func isText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// Warnings returns what the loader repaired or dropped while reading p.
func Warnings(p *profile.Profile) []string { return pbuild.Warnings(p) }

// isExact reports whether p holds measured durations rather than samples.
func isExact(p *profile.Profile) bool { return pbuild.IsExact(p) }

// sourceFormat returns the format p was loaded from, or FormatPprof when p
// carries no record of it (a profile read from a pprof file that we did not write).
func sourceFormat(p *profile.Profile) Format {
	if f := meta.Format(p.Comments); f != "" {
		return Format(f)
	}
	return FormatPprof
}

// Write writes p to w in format f (FormatPprof, FormatSpeedscope or FormatFolded).
func Write(w io.Writer, p *profile.Profile, f Format) error {
	switch f {
	case FormatPprof:
		return p.Write(w)
	case FormatSpeedscope:
		return speedscope.Write(w, p)
	case FormatFolded:
		return folded.Write(w, p)
	}
	return fmt.Errorf("cannot write format %q (can write pprof, speedscope, folded)", f)
}
