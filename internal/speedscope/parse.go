package speedscope

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/google/pprof/profile"
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
