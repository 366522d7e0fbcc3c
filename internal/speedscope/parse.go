package speedscope

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/jsonscan"
	"github.com/hotbudget/hotbudget/internal/membudget"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// Schema is the value of "$schema" in every speedscope file.
const Schema = "https://www.speedscope.app/file-format-schema.json"

// NoneUnitNanos is the time one value of unit "none" stands for: 1 ms, the
// same assumption package folded makes for one sample.
const NoneUnitNanos = int64(1e6)

// MaxStackFrames bounds the frames that the samples built from evented
// profiles hold in all (each call path becomes a sample holding its whole
// stack, so a small file of deeply nested events could otherwise need
// gigabytes). 1<<25 frames take about 400 MB.
const MaxStackFrames = 1 << 25

// maxStackFrames is MaxStackFrames; tests lower it.
var maxStackFrames int64 = MaxStackFrames

// maxNanos bounds converted timestamps so that differences cannot overflow.
const maxNanos = math.MaxInt64 / 2

// Profile types.
const (
	typeEvented = "evented"
	typeSampled = "sampled"
)

type frame struct {
	name, file string
	line, col  int64
}

type event struct {
	at    float64
	frame int32
	open  bool
}

// rawProfile is one entry of "profiles", kept compact until frames are known.
type rawProfile struct {
	index      int
	typ        string
	name       string
	unit       string
	hasUnit    bool
	start, end float64
	hasStart   bool
	hasEnd     bool
	events     []event
	stacks     []int32 // frame indexes of all samples, root first, concatenated
	ends       []int   // ends[i] is the end of sample i in stacks
	weights    []float64
}

type file struct {
	schema    string
	hasSchema bool
	name      string
	exporter  string
	active    float64
	hasActive bool
	frames    []frame
	hasShared bool
	profiles  []*rawProfile
	hasProfs  bool
	warnings  []string
}

type reader struct {
	d *json.Decoder
}

func (r *reader) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", r.d.InputOffset(), fmt.Sprintf(format, args...))
}

func (r *reader) token() (json.Token, error) {
	t, err := r.d.Token()
	if err == io.EOF {
		return nil, fmt.Errorf("offset %d: unexpected end of input: %w", r.d.InputOffset(), io.ErrUnexpectedEOF)
	}
	if err != nil {
		return nil, fmt.Errorf("offset %d: %w", r.d.InputOffset(), err)
	}
	return t, nil
}

func (r *reader) delim(want json.Delim, what string) error {
	t, err := r.token()
	if err != nil {
		return err
	}
	if t != want {
		return r.errorf("%s: got %s, want %q", what, describe(t), string(want))
	}
	return nil
}

// begin reads the start of an array or object, returning false for null.
func (r *reader) begin(want json.Delim, what string) (bool, error) {
	t, err := r.token()
	if err != nil {
		return false, err
	}
	if t == nil {
		return false, nil
	}
	if t != want {
		return false, r.errorf("%s: got %s, want %q", what, describe(t), string(want))
	}
	return true, nil
}

func (r *reader) key() (string, error) {
	t, err := r.token()
	if err != nil {
		return "", err
	}
	k, ok := t.(string)
	if !ok {
		return "", r.errorf("got %s, want an object key", describe(t))
	}
	return k, nil
}

// str reads a string; null gives "" and false.
func (r *reader) str(what string) (string, bool, error) {
	t, err := r.token()
	if err != nil {
		return "", false, err
	}
	switch v := t.(type) {
	case nil:
		return "", false, nil
	case string:
		return v, true, nil
	case json.Delim:
		return "", false, r.errorf("%s: got %s, want a string", what, describe(t))
	}
	return "", false, r.errorf("%s: got %s, want a string", what, describe(t))
}

// num reads a number; null gives 0 and false.
func (r *reader) num(what string) (float64, bool, error) {
	t, err := r.token()
	if err != nil {
		return 0, false, err
	}
	switch v := t.(type) {
	case nil:
		return 0, false, nil
	case float64:
		return v, true, nil
	}
	return 0, false, r.errorf("%s: got %s, want a number", what, describe(t))
}

// decode decodes the next value into v; what and index (if >= 0) name it in errors.
func (r *reader) decode(v any, what string, index int) error {
	err := r.d.Decode(v)
	if err != nil && index >= 0 {
		what += " " + strconv.Itoa(index)
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("offset %d: %s: unexpected end of input: %w", r.d.InputOffset(), what, io.ErrUnexpectedEOF)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			what += ` "` + te.Field + `"`
		}
		want := "a number"
		if te.Type != nil && te.Type.Kind() == reflect.String {
			want = "a string"
		}
		return fmt.Errorf("offset %d: %s: got a %s, want %s: %w", te.Offset, what, te.Value, want, err)
	}
	if err != nil {
		return fmt.Errorf("offset %d: %s: %w", r.d.InputOffset(), what, err)
	}
	return nil
}

// skip skips the value whose first token is next.
func (r *reader) skip() error { return jsonscan.SkipTokens(r.token) }

func describe(t json.Token) string {
	switch v := t.(type) {
	case nil:
		return "null"
	case json.Delim:
		return strconv.Quote(string(v))
	case string:
		return "string " + strconv.Quote(truncate(v, 40))
	case float64:
		return "number " + strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return "boolean " + strconv.FormatBool(v)
	}
	return fmt.Sprint(t)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Parse reads a speedscope JSON file. See the package documentation for the
// decisions it takes. Errors name the profile (index and name), the event or
// sample index, or the input offset.
func Parse(rd io.Reader, o pbuild.Options) (*profile.Profile, error) {
	r := &reader{d: json.NewDecoder(rd)}
	f := &file{}
	if err := r.delim('{', "top level"); err != nil {
		return nil, err
	}
	for r.d.More() {
		k, err := r.key()
		if err != nil {
			return nil, err
		}
		switch k {
		case "$schema":
			if f.schema, f.hasSchema, err = r.str(`"$schema"`); err != nil {
				return nil, err
			}
		case "name":
			if f.name, _, err = r.str(`"name"`); err != nil {
				return nil, err
			}
		case "exporter":
			if f.exporter, _, err = r.str(`"exporter"`); err != nil {
				return nil, err
			}
		case "activeProfileIndex":
			if f.active, f.hasActive, err = r.num(`"activeProfileIndex"`); err != nil {
				return nil, err
			}
		case "shared":
			if f.hasShared {
				return nil, r.errorf(`"shared" appears twice`)
			}
			f.hasShared = true
			if err := r.shared(f); err != nil {
				return nil, err
			}
		case "profiles":
			if f.hasProfs {
				return nil, r.errorf(`"profiles" appears twice`)
			}
			f.hasProfs = true
			if err := r.profiles(f); err != nil {
				return nil, err
			}
		default:
			if err := r.skip(); err != nil {
				return nil, err
			}
		}
	}
	if err := r.delim('}', "end of top level"); err != nil {
		return nil, err
	}
	return f.build(o.Meter)
}

func (r *reader) shared(f *file) error {
	ok, err := r.begin('{', `"shared"`)
	if err != nil || !ok {
		return err
	}
	for r.d.More() {
		k, err := r.key()
		if err != nil {
			return err
		}
		if k != "frames" {
			if err := r.skip(); err != nil {
				return err
			}
			continue
		}
		ok, err := r.begin('[', `"shared.frames"`)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		for r.d.More() {
			fr, err := r.frame(f, len(f.frames))
			if err != nil {
				return err
			}
			f.frames = append(f.frames, fr)
		}
		if err := r.delim(']', `end of "shared.frames"`); err != nil {
			return err
		}
	}
	return r.delim('}', `end of "shared"`)
}

func (r *reader) frame(f *file, i int) (frame, error) {
	var fr frame
	what := fmt.Sprintf("frame %d", i)
	ok, err := r.begin('{', what)
	if err != nil || !ok {
		return fr, err
	}
	for r.d.More() {
		k, err := r.key()
		if err != nil {
			return fr, err
		}
		switch k {
		case "name":
			fr.name, _, err = r.str(what + ` "name"`)
		case "file":
			fr.file, _, err = r.str(what + ` "file"`)
		case "line", "col":
			var v float64
			var has bool
			v, has, err = r.num(what + ` "` + k + `"`)
			if err == nil && has {
				n := int64(v)
				if v < 0 || v > math.MaxInt32 || float64(n) != v {
					f.warnings = append(f.warnings, fmt.Sprintf("frame %d: %s %g is not a non-negative integer; taken as unknown", i, k, v))
					n = 0
				}
				if k == "line" {
					fr.line = n
				} else {
					fr.col = n
				}
			}
		default:
			err = r.skip()
		}
		if err != nil {
			return fr, err
		}
	}
	if fr.name == "" {
		fr.name = "(anonymous)"
	}
	return fr, r.delim('}', "end of "+what)
}

func (r *reader) profiles(f *file) error {
	ok, err := r.begin('[', `"profiles"`)
	if err != nil || !ok {
		return err
	}
	for r.d.More() {
		p := &rawProfile{index: len(f.profiles)}
		if err := r.profile(p); err != nil {
			return fmt.Errorf("profile %d: %w", p.index, err)
		}
		f.profiles = append(f.profiles, p)
	}
	return r.delim(']', `end of "profiles"`)
}

func (r *reader) profile(p *rawProfile) error {
	if err := r.delim('{', "profile"); err != nil {
		return err
	}
	for r.d.More() {
		k, err := r.key()
		if err != nil {
			return err
		}
		switch k {
		case "type":
			p.typ, _, err = r.str(`"type"`)
		case "name":
			p.name, _, err = r.str(`"name"`)
		case "unit":
			p.unit, p.hasUnit, err = r.str(`"unit"`)
		case "startValue":
			p.start, p.hasStart, err = r.num(`"startValue"`)
		case "endValue":
			p.end, p.hasEnd, err = r.num(`"endValue"`)
		case "events":
			err = r.events(p)
		case "samples":
			err = r.samples(p)
		case "weights":
			err = r.weights(p)
		default:
			err = r.skip()
		}
		if err != nil {
			return err
		}
	}
	return r.delim('}', "end of profile")
}

// jsonEvent is one event as encoding/json decodes it; NaN marks a missing number.
type jsonEvent struct {
	Type  string  `json:"type"`
	At    float64 `json:"at"`
	Frame float64 `json:"frame"`
}

func (r *reader) events(p *rawProfile) error {
	ok, err := r.begin('[', `"events"`)
	if err != nil || !ok {
		return err
	}
	// Decoding a whole event at once is several times faster than a token
	// per key and value.
	for r.d.More() {
		i := len(p.events)
		je := jsonEvent{At: math.NaN(), Frame: math.NaN()}
		if err := r.decode(&je, "event", i); err != nil {
			return err
		}
		ev := event{at: je.At}
		switch je.Type {
		case "O":
			ev.open = true
		case "C":
		default:
			return r.errorf("event %d: type %q, want \"O\" or \"C\"", i, truncate(je.Type, 40))
		}
		if math.IsNaN(je.At) {
			return r.errorf(`event %d: no "at"`, i)
		}
		v := je.Frame
		if math.IsNaN(v) {
			return r.errorf(`event %d: no "frame"`, i)
		}
		if v < 0 || v > math.MaxInt32 || v != math.Trunc(v) {
			return r.errorf("event %d: frame index %g is not a valid index", i, v)
		}
		ev.frame = int32(v)
		p.events = append(p.events, ev)
	}
	return r.delim(']', `end of "events"`)
}

func (r *reader) samples(p *rawProfile) error {
	ok, err := r.begin('[', `"samples"`)
	if err != nil || !ok {
		return err
	}
	// Each stack is taken as raw JSON (checked by the decoder) and its
	// numbers are read by numbers: several times faster than a token or a
	// reflective decode per number.
	var raw json.RawMessage
	for r.d.More() {
		i := len(p.ends)
		if err := r.decode(&raw, "sample", i); err != nil {
			return err
		}
		err := numbers(raw, func(v float64) error {
			if v < 0 || v > math.MaxInt32 || v != math.Trunc(v) {
				return fmt.Errorf("frame index %g is not a valid index", v)
			}
			p.stacks = append(p.stacks, int32(v))
			return nil
		})
		if err != nil {
			return r.errorf("sample %d: %v", i, err)
		}
		p.ends = append(p.ends, len(p.stacks))
	}
	return r.delim(']', `end of "samples"`)
}

func (r *reader) weights(p *rawProfile) error {
	var raw json.RawMessage
	if err := r.decode(&raw, `"weights"`, -1); err != nil {
		return err
	}
	p.weights = p.weights[:0]
	err := numbers(raw, func(v float64) error {
		p.weights = append(p.weights, v)
		return nil
	})
	if err != nil {
		return r.errorf(`"weights": %v`, err)
	}
	return nil
}

// numbers calls f with each number of raw, a valid JSON value that must be
// an array of numbers or null.
func numbers(raw []byte, f func(float64) error) error {
	b := trimSpace(raw)
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return fmt.Errorf("got %s, want an array", kind(b))
	}
	b = trimSpace(b[1 : len(b)-1])
	for len(b) > 0 {
		var tok []byte
		if c := b[0]; c != '-' && (c < '0' || c > '9') {
			return fmt.Errorf("got %s, want a number", kind(b))
		}
		j := 0
		for j < len(b) && b[j] != ',' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		tok, b = b[:j], trimSpace(b[j:])
		if len(b) > 0 {
			b = trimSpace(b[1:]) // the comma
		}
		v, ok := smallInt(tok)
		if !ok {
			var err error
			if v, err = strconv.ParseFloat(string(tok), 64); err != nil {
				return fmt.Errorf("number %q: %w", tok, err)
			}
		}
		if err := f(v); err != nil {
			return err
		}
	}
	return nil
}

// smallInt parses a non-negative integer of up to 15 digits.
func smallInt(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	n := int64(0)
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return float64(n), true
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// kind names the JSON value b starts.
func kind(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// unitNanos returns how many nanoseconds one value of unit stands for.
func unitNanos(unit string) (float64, error) {
	switch unit {
	case "nanoseconds":
		return 1, nil
	case "microseconds":
		return 1e3, nil
	case "milliseconds":
		return 1e6, nil
	case "seconds":
		return 1e9, nil
	case "none":
		return float64(NoneUnitNanos), nil
	case "bytes":
		return 0, errors.New(`unit "bytes" is a memory profile; only time units are supported`)
	}
	return 0, fmt.Errorf("unknown unit %q (want none, nanoseconds, microseconds, milliseconds or seconds)", unit)
}

func toNanos(v, factor float64) (int64, bool) {
	x := math.Round(v * factor)
	if math.IsNaN(x) || x > maxNanos || x < -maxNanos {
		return 0, false
	}
	return int64(x), true
}

// builder holds what build needs while adding profiles.
type builder struct {
	f      *file
	b      *pbuild.Builder
	locs   []*profile.Location
	stack  []*profile.Location // leaf first, reused
	total  int64
	start  int64
	end    int64
	spans  bool
	frames int64   // stack frames added from evented profiles
	weight []int64 // positive sample weights, for Period
}

func (f *file) build(m *membudget.Meter) (*profile.Profile, error) {
	if f.hasSchema && f.schema != Schema {
		return nil, fmt.Errorf("\"$schema\" is %q, want %q", truncate(f.schema, 100), Schema)
	}
	if !f.hasProfs {
		return nil, errors.New(`no "profiles"`)
	}
	if len(f.profiles) == 0 {
		return nil, errors.New(`"profiles" is empty`)
	}
	active := -1
	if f.hasActive {
		if f.active >= 0 && f.active < float64(len(f.profiles)) && f.active == math.Trunc(f.active) {
			active = int(f.active)
		} else {
			f.warnings = append(f.warnings, fmt.Sprintf("activeProfileIndex %g is not an index of the %d profiles; ignored", f.active, len(f.profiles)))
		}
	}
	chosen := f.profiles[0]
	if active >= 0 {
		chosen = f.profiles[active]
	}
	var kind pbuild.Kind
	switch chosen.typ {
	case typeEvented:
		kind = pbuild.Exact
	case typeSampled:
		kind = pbuild.Sampled
	default:
		return nil, profileError(chosen, fmt.Errorf("type %q, want %q or %q", chosen.typ, typeEvented, typeSampled))
	}
	bd := &builder{f: f, b: pbuild.New(kind), locs: make([]*profile.Location, len(f.frames))}
	bd.b.SetMeter(m)
	if !f.hasSchema {
		bd.b.Warnf(`no "$schema": read as speedscope because of its keys`)
	}
	for _, w := range f.warnings {
		bd.b.Warnf("%s", w)
	}
	if active >= 0 {
		pr := bd.b.Profile()
		pr.Comments = append(pr.Comments, fmt.Sprintf("speedscope activeProfileIndex: %d (%s)", active, profileName(chosen)))
	}
	for _, p := range f.profiles {
		var err error
		switch p.typ {
		case typeEvented:
			err = bd.evented(p, kind == pbuild.Exact)
		case typeSampled:
			err = bd.sampled(p, kind == pbuild.Sampled)
		default:
			err = fmt.Errorf("type %q, want %q or %q", p.typ, typeEvented, typeSampled)
		}
		if err != nil {
			return nil, profileError(p, err)
		}
		if p.typ != chosen.typ {
			bd.b.Warnf("profile %d (%s) is %s but profile %d is %s: skipped, exact and sampled data are not mixed",
				p.index, profileName(p), p.typ, chosen.index, chosen.typ)
		}
	}
	var period int64
	if kind == pbuild.Sampled {
		period = pbuild.Median(bd.weight)
	}
	var dur int64
	if bd.spans {
		dur = bd.end - bd.start
	}
	return bd.b.Finish("speedscope", period, dur)
}

func profileName(p *rawProfile) string {
	if p.name == "" {
		return "profile " + strconv.Itoa(p.index)
	}
	return p.name
}

func profileError(p *rawProfile, err error) error {
	if p.name == "" {
		return fmt.Errorf("profile %d: %w", p.index, err)
	}
	return fmt.Errorf("profile %d (%q): %w", p.index, truncate(p.name, 100), err)
}

func (bd *builder) factor(p *rawProfile) (float64, error) {
	if !p.hasUnit {
		return 0, errors.New(`no "unit"`)
	}
	fac, err := unitNanos(p.unit)
	if err != nil {
		return 0, err
	}
	if p.unit == "none" {
		bd.b.Warnf("unit \"none\": each unit taken as %s", timeString(NoneUnitNanos))
	}
	return fac, nil
}

func timeString(ns int64) string {
	return fmt.Sprint(float64(ns)/1e6) + "ms"
}

func (bd *builder) loc(i int32) *profile.Location {
	if l := bd.locs[i]; l != nil {
		return l
	}
	fr := bd.f.frames[i]
	// A frame is a function: (name, file, line, col) tell functions apart,
	// as speedscope keeps every frame apart. The line goes to StartLine and
	// the column to SystemName so that pbuild keys functions by all four.
	sys := fr.name
	if fr.col != 0 {
		sys = fr.name + ":" + strconv.FormatInt(fr.line, 10) + ":" + strconv.FormatInt(fr.col, 10)
	}
	l := bd.b.Location(pbuild.Frame{Name: fr.name, SystemName: sys, File: fr.file, StartLine: fr.line, Line: fr.line, Column: fr.col})
	bd.locs[i] = l
	return l
}

func (bd *builder) frameName(i int32) string {
	return fmt.Sprintf("%d (%q)", i, truncate(bd.f.frames[i].name, 100))
}

// addTime adds ns to the running total, failing on overflow.
func (bd *builder) addTime(ns int64) error {
	if ns > math.MaxInt64-bd.total {
		return errors.New("total time overflows int64 nanoseconds")
	}
	bd.total += ns
	return nil
}

// span extends the covered time by [start, end] in nanoseconds.
func (bd *builder) span(start, end int64) {
	if !bd.spans {
		bd.start, bd.end, bd.spans = start, end, true
		return
	}
	bd.start = min(bd.start, start)
	bd.end = max(bd.end, end)
}

// declared returns the profile's [startValue, endValue] in nanoseconds if usable.
func declared(p *rawProfile, fac float64) (int64, int64, bool) {
	if !p.hasStart || !p.hasEnd {
		return 0, 0, false
	}
	s, ok1 := toNanos(p.start, fac)
	e, ok2 := toNanos(p.end, fac)
	if !ok1 || !ok2 || e <= s {
		return 0, 0, false
	}
	return s, e, true
}

// evented checks an evented profile and, if add, adds its time.
func (bd *builder) evented(p *rawProfile, add bool) error {
	if len(p.ends) > 0 || len(p.weights) > 0 {
		return errors.New(`an evented profile has "samples" or "weights"`)
	}
	fac, err := bd.factor(p)
	if err != nil {
		return err
	}
	labels := pbuild.NewLabels(pbuild.LabelProfile, profileName(p), pbuild.LabelThread, profileName(p))
	// Time and closed-frame counts are summed in a call tree, O(1) per
	// event whatever the depth; the tree's nodes become samples at the end.
	t := newCallTree()
	cur := int32(0)  // current node; 0 is the root
	var open []int32 // frame indexes, root first
	var opened []int // event index that opened each open frame
	var prevAt float64
	var prevNs int64
	for i, ev := range p.events {
		if int(ev.frame) >= len(bd.f.frames) {
			return fmt.Errorf("event %d: frame index %d out of range (%d frames)", i, ev.frame, len(bd.f.frames))
		}
		ns, ok := toNanos(ev.at, fac)
		if !ok {
			return fmt.Errorf("event %d: at %g is out of range", i, ev.at)
		}
		if i > 0 && ev.at < prevAt {
			return fmt.Errorf("event %d: at %g is before the previous event's at %g (events must be in time order)", i, ev.at, prevAt)
		}
		dt := int64(0)
		if i > 0 {
			dt = ns - prevNs
		}
		prevAt, prevNs = ev.at, ns
		if cur != 0 && dt > 0 {
			if err := bd.addTime(dt); err != nil {
				return err
			}
			t.nodes[cur].ns += dt
		}
		if ev.open {
			cur = t.child(cur, ev.frame)
			open = append(open, ev.frame)
			opened = append(opened, i)
			continue
		}
		if len(open) == 0 {
			return fmt.Errorf("event %d: closes frame %s but no frame is open", i, bd.frameName(ev.frame))
		}
		if top := open[len(open)-1]; top != ev.frame {
			return fmt.Errorf("event %d: closes frame %s but the innermost open frame is %s, opened at event %d (events must be properly nested)",
				i, bd.frameName(ev.frame), bd.frameName(top), opened[len(opened)-1])
		}
		t.nodes[cur].count++
		cur = t.nodes[cur].parent
		open = open[:len(open)-1]
		opened = opened[:len(opened)-1]
	}
	if len(open) > 0 {
		return fmt.Errorf("frame %s opened at event %d is never closed (%d frames left open)",
			bd.frameName(open[len(open)-1]), opened[len(opened)-1], len(open))
	}
	if !add {
		return nil
	}
	if err := bd.addTree(t, labels); err != nil {
		return err
	}
	if s, e, ok := declared(p, fac); ok {
		bd.span(s, e)
	} else if len(p.events) > 0 {
		s, _ := toNanos(p.events[0].at, fac)
		e, _ := toNanos(p.events[len(p.events)-1].at, fac)
		bd.span(s, e)
	}
	return nil
}

// callTree sums an evented profile by call path.
type callTree struct {
	nodes    []treeNode
	children map[uint64]int32 // parent<<32 | frame → node
}

type treeNode struct {
	parent, frame, depth int32
	count, ns            int64
}

func newCallTree() *callTree {
	return &callTree{nodes: []treeNode{{frame: -1}}, children: make(map[uint64]int32)}
}

// child returns the node for frame under parent, creating it.
func (t *callTree) child(parent, frame int32) int32 {
	k := uint64(parent)<<32 | uint64(uint32(frame))
	if c, ok := t.children[k]; ok {
		return c
	}
	c := int32(len(t.nodes))
	t.nodes = append(t.nodes, treeNode{parent: parent, frame: frame, depth: t.nodes[parent].depth + 1})
	t.children[k] = c
	return c
}

// addTree adds one sample per call path that has time or closed frames.
// The frames all samples hold are bounded by MaxStackFrames, checked first.
func (bd *builder) addTree(t *callTree, labels pbuild.Labels) error {
	var frames int64
	for _, n := range t.nodes[1:] {
		if n.count > 0 || n.ns > 0 {
			frames += int64(n.depth)
		}
	}
	if bd.frames += frames; bd.frames > maxStackFrames {
		return fmt.Errorf("the stacks of its %d call paths hold %d frames, more than the limit of %d", len(t.nodes)-1, bd.frames, maxStackFrames)
	}
	for i := range t.nodes[1:] {
		n := &t.nodes[i+1]
		if n.count == 0 && n.ns == 0 {
			continue
		}
		st := bd.stack[:0]
		for x := int32(i + 1); x != 0; x = t.nodes[x].parent {
			st = append(st, bd.loc(t.nodes[x].frame))
		}
		bd.stack = st
		bd.b.Add(st, n.count, n.ns, labels)
	}
	return nil
}

// addStack adds a root-first stack of frame indexes.
func (bd *builder) addStack(rootFirst []int32, count, ns int64, labels pbuild.Labels) error {
	if err := bd.addTime(ns); err != nil {
		return err
	}
	st := bd.stack[:0]
	for i := len(rootFirst) - 1; i >= 0; i-- {
		st = append(st, bd.loc(rootFirst[i]))
	}
	bd.stack = st
	bd.b.Add(st, count, ns, labels)
	return nil
}

// sampled checks a sampled profile and, if add, adds its samples.
func (bd *builder) sampled(p *rawProfile, add bool) error {
	if len(p.events) > 0 {
		return errors.New(`a sampled profile has "events"`)
	}
	if len(p.ends) != len(p.weights) {
		return fmt.Errorf("%d samples but %d weights (want the same number)", len(p.ends), len(p.weights))
	}
	fac, err := bd.factor(p)
	if err != nil {
		return err
	}
	labels := pbuild.NewLabels(pbuild.LabelProfile, profileName(p), pbuild.LabelThread, profileName(p))
	var sum int64
	begin := 0
	for i, end := range p.ends {
		stack := p.stacks[begin:end]
		begin = end
		for _, fi := range stack {
			if int(fi) >= len(bd.f.frames) {
				return fmt.Errorf("sample %d: frame index %d out of range (%d frames)", i, fi, len(bd.f.frames))
			}
		}
		w := p.weights[i]
		if w < 0 {
			return fmt.Errorf("sample %d: negative weight %g", i, w)
		}
		ns, ok := toNanos(w, fac)
		if !ok {
			return fmt.Errorf("sample %d: weight %g is out of range", i, w)
		}
		if !add {
			continue
		}
		if err := bd.addStack(stack, 1, ns, labels); err != nil {
			return err
		}
		sum += ns
		if ns > 0 {
			bd.weight = append(bd.weight, ns)
		}
	}
	if !add {
		return nil
	}
	if s, e, ok := declared(p, fac); ok {
		bd.span(s, e)
	} else if len(p.ends) > 0 {
		s, _ := toNanos(p.start, fac)
		if s > maxNanos-sum {
			s = 0
		}
		bd.span(s, s+sum)
	}
	return nil
}
