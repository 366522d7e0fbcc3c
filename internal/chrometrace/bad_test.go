package chrometrace

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/pbuild"
)

const chunkHead = `{"name":"Profile","ph":"P","id":"0x1","pid":1,"tid":1,"ts":0,"args":{"data":{"startTime":0}}},`

// TestBadInput: malformed traces give an error that says what and where
// (event index, offset, profile id), never a panic or a hang.
func TestBadInput(t *testing.T) {
	deepArgs := `[{"ph":"X","ts":0,"dur":1,"args":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}]`
	var deepB strings.Builder
	deepB.WriteString("[")
	for i := 0; i < MaxDepth+5; i++ {
		if i > 0 {
			deepB.WriteString(",")
		}
		deepB.WriteString(`{"ph":"B","name":"f","pid":1,"tid":1,"ts":1}`)
	}
	deepB.WriteString("]")
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "empty input"},
		{"space only", " \n ", "empty input"},
		{"not json", "hello", `want a JSON array or object of trace events, got 'h'`},
		{"number", "42", `got '4'`},
		{"object without traceEvents", `{"foo":1}`, "no traceEvents key"},
		{"traceEvents not an array", `{"traceEvents":{}}`, "traceEvents at offset 15: want an array"},
		{"event not an object", `[1]`, "events[0] at offset 1: want an event object"},
		{"cut inside an event", `[{"ph":"X","ts":1`, "events[0] starting at offset 1 is cut off"},
		{"cut inside the second event", `[{"ph":"I","ts":1},{"ph":"X","na`, "events[1] starting at offset 19 is cut off"},
		{"missing comma", `[{"ph":"I"} {"ph":"I"}]`, "after event 0: want ',' or ']'"},
		{"garbage after", `[{"ph":"I","ts":1}] x`, `unexpected 'x' after the trace`},
		{"ph not a string", `[{"ph":1}]`, "events[0] at offset 1: ph at offset 7: want a string"},
		{"ts not a number", `[{"ph":"X","ts":"soon","dur":1}]`, `ts at offset 16: "soon" is not a number`},
		{"ts an object", `[{"ph":"X","ts":{}}]`, "ts at offset 16: want a number"},
		{"pid an array", `[{"ph":"X","pid":[1]}]`, "pid at offset 17: want a number or a string"},
		{"huge ts", `[{"ph":"X","ts":1e300,"dur":1}]`, "out of range"},
		{"bad key", `[{ph:"X"}]`, "want a string key"},
		{"samples not ints", `[` + chunkHead + `{"name":"ProfileChunk","ph":"P","id":"0x1","pid":1,"tid":1,"args":{"data":{"cpuProfile":{"samples":["a"]},"timeDeltas":[1]}}}]`,
			`events[1] (P "ProfileChunk") at offset 95: cpuProfile.samples at offset 195: want integers`},
		{"fractional delta", `[` + chunkHead + `{"name":"ProfileChunk","ph":"P","id":"0x1","pid":1,"tid":1,"args":{"data":{"cpuProfile":{"samples":[1]},"timeDeltas":[1.5]}}}]`,
			"args.data.timeDeltas at offset"},
		{"lengths differ", `[` + chunkHead + `{"name":"ProfileChunk","ph":"P","id":"0x1","pid":1,"tid":1,"args":{"data":{"cpuProfile":{"samples":[1,1]},"timeDeltas":[1]}}}]`,
			"profile 0x1: samples and timeDeltas have different lengths (2 and 1)"},
		{"node without id", `[` + chunkHead + `{"name":"ProfileChunk","ph":"P","id":"0x1","pid":1,"tid":1,"args":{"data":{"cpuProfile":{"nodes":[{"callFrame":{}}]}}}}]`,
			"cpuProfile.nodes[0] at offset 193 has no id"},
		{"cyclic nodes", `[` + chunkHead + `{"name":"ProfileChunk","ph":"P","id":"0x1","pid":1,"tid":1,"args":{"data":{"cpuProfile":{"nodes":[{"id":1,"parent":2,"callFrame":{}},{"id":2,"parent":1,"callFrame":{}}],"samples":[1]},"timeDeltas":[1]}}}]`,
			"profile 0x1 of pid 1: no root"},
		{"delta overflow", `[` + chunkHead + `{"name":"ProfileChunk","ph":"P","id":"0x1","pid":1,"tid":1,"args":{"data":{"cpuProfile":{"samples":[1,1]},"timeDeltas":[9223372036854775807,9223372036854775807]}}}]`,
			"time overflows"},
		{"nothing to show", `[{"ph":"M","name":"thread_name","args":{"name":"x"}}]`, "no CPU samples and no duration events in 1 trace events"},
		{"huge nesting in args", deepArgs, ""},
		{"deep B nesting", deepB.String(), "nest deeper than 10000"},
		{"unclosed string", `[{"ph":"X","name":"abc`, "is cut off"},
		{"bad hermes sample", `{"traceEvents":[],"samples":[{"ts":"x","sf":1}],"stackFrames":{}}`, `samples[0] at offset 29: ts: "x" is not a number`},
		{"hermes unknown frame", `{"traceEvents":[],"samples":[{"ts":1,"sf":9}],"stackFrames":{}}`, `names unknown stack frame "9"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(strings.NewReader(tc.in), pbuild.Options{})
			if tc.want == "" { // must not fail or blow up; just read
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; profile with %d samples, warnings %q", len(p.Sample), pbuild.Warnings(p))
			}
			if p != nil {
				t.Error("profile and error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestTolerated: real-world oddities that are read, some with a warning.
func TestTolerated(t *testing.T) {
	tests := []struct{ name, in, warn string }{
		{"BOM", "\xef\xbb\xbf" + `[{"ph":"X","name":"a","ts":0,"dur":5}]`, ""},
		{"object not closed", `{"traceEvents":[{"ph":"X","name":"a","ts":0,"dur":5}]`, "top-level object is not closed"},
		{"trailing comma before ]", `[{"ph":"X","name":"a","ts":0,"dur":5},]`, "trailing comma"},
		{"fractional and string times", `[{"ph":"X","name":"b","ts":"0.5","dur":4.5}]`, ""},
		{"unknown phase", `[{"ph":"Q","ts":0},{"ph":"X","name":"a","ts":0,"dur":5}]`, `unknown phase "Q"`},
		{"instants, counters, async, flow, objects add nothing", `[
			{"ph":"I","name":"i","ts":0},{"ph":"i","name":"i","ts":1,"s":"g"},{"ph":"R","name":"mark","ts":1},
			{"ph":"C","name":"c","ts":1,"args":{"v":3}},
			{"ph":"b","name":"a","id":"0x1","ts":0,"cat":"x"},{"ph":"n","name":"a","id":"0x1","ts":1},{"ph":"e","name":"a","id":"0x1","ts":9},
			{"ph":"s","name":"f","id":2,"ts":0},{"ph":"t","name":"f","id":2,"ts":1},{"ph":"f","name":"f","id":2,"ts":2,"bp":"e"},
			{"ph":"N","name":"o","id":"w","ts":0},{"ph":"O","name":"o","id":"w","ts":1,"args":{"snapshot":{"a":[1,{"b":null}]}}},{"ph":"D","name":"o","id":"w","ts":2},
			{"ph":"X","name":"a","ts":0,"dur":5}]`, ""},
		{"negative dur", `[{"ph":"X","name":"b","ts":0,"dur":-1},{"ph":"X","name":"a","ts":0,"dur":5}]`, "negative dur dropped"},
		{"chunk before head and no head", `[{"name":"ProfileChunk","ph":"P","id":"0x1","pid":1,"tid":4,"args":{"data":{"cpuProfile":{"nodes":[{"id":1,"callFrame":{"functionName":"(root)"}},{"id":2,"parent":1,"callFrame":{"functionName":"f"}}],"samples":[2,2]},"timeDeltas":[1,1]}}}]`,
			"has no Profile event: its thread is taken from its chunks (tid 4)"},
		{"non-profile events with odd args.data", `[{"ph":"X","name":"a","ts":0,"dur":5,"args":{"data":{"cpuProfile":3,"timeDeltas":"x","startTime":"y"}}}]`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(strings.NewReader(tc.in), pbuild.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := selfTotal(p)
			if len(got) == 0 {
				t.Fatal("no functions")
			}
			if tc.warn != "" {
				checkWarnings(t, p, []string{tc.warn})
			}
			if a, ok := got["a"]; ok && a.self != 5000 {
				t.Errorf("a: self %d, want 5000", a.self)
			}
		})
	}
}

// TestSmallReads: results do not depend on how the reader splits input.
func TestSmallReads(t *testing.T) {
	data := readFile(t, seedTrace)
	want, err := Parse(bytes.NewReader(data), pbuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(&oneByte{data}, pbuild.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sameProfile(t, got, want)
}

type oneByte struct{ b []byte }

func (r *oneByte) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	p[0] = r.b[0]
	r.b = r.b[1:]
	return 1, nil
}
