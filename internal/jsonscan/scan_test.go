package jsonscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/iotest"
)

func TestIntsAcrossBufferRefills(t *testing.T) {
	// One byte at a time: every number straddles a refill.
	s := New(iotest.OneByteReader(strings.NewReader(" [1, -20 ,300,\n40000000000]")))
	if c, err := s.Next(); err != nil || c != '[' {
		t.Fatalf("Next = %q, %v", c, err)
	}
	s.Unread()
	got, err := s.Ints("samples")
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{1, -20, 300, 40000000000}
	if len(got) != len(want) {
		t.Fatalf("Ints = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Ints = %v, want %v", got, want)
		}
	}
}

func TestIntsRefusesFractions(t *testing.T) {
	_, err := New(strings.NewReader(`[1, 2.5]`)).Ints("timeDeltas")
	if err == nil || !strings.Contains(err.Error(), "timeDeltas at offset") {
		t.Fatalf("Ints on a fraction: %v, want an error naming the array and offset", err)
	}
	if !strings.Contains(err.Error(), "got 2.5 ") {
		t.Errorf("the message lacks the number: %v", err)
	}
	// Digits already gone from the buffer (read one byte at a time) are
	// shown as an ellipsis, not dropped silently.
	_, err = New(iotest.OneByteReader(strings.NewReader(`[1, 23.5]`))).Ints("timeDeltas")
	if err == nil || !strings.Contains(err.Error(), "got ….5 ") {
		t.Errorf("fraction across refills: %v", err)
	}
}

func TestTruncatedIsErrEOF(t *testing.T) {
	s := New(strings.NewReader(`{"a": [1, 2`))
	err := s.Skip()
	if !errors.Is(err, ErrEOF) {
		t.Fatalf("Skip on truncated input: %v, want ErrEOF", err)
	}
	if !strings.Contains(err.Error(), "offset 11") {
		t.Errorf("error %q does not name the offset", err)
	}
}

func TestObjectKeysAndValues(t *testing.T) {
	s := New(strings.NewReader(`{"x": {"deep": [1, {"y": "z"}]}, "n": 7}`))
	if err := s.Expect('{', "an object"); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for first := true; ; first = false {
		k, end, err := s.ObjectKey(first)
		if err != nil {
			t.Fatal(err)
		}
		if end {
			break
		}
		keys = append(keys, k)
		raw, err := s.Value(nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if k == "x" && string(raw) != `{"deep": [1, {"y": "z"}]}` {
			t.Errorf("raw value of x = %s", raw)
		}
	}
	if strings.Join(keys, ",") != "x,n" {
		t.Errorf("keys %v", keys)
	}
}

func TestNextInt(t *testing.T) {
	pad := strings.Repeat(" ", 22)
	for _, c := range []struct {
		in  string
		v   int64
		n   int
		why string
	}{
		{",42,", 42, 3, "plain"},
		{",-7]", -7, 3, "negative, last element"},
		{",0,", 0, 2, "zero"},
		{",123456789012345678,", 123456789012345678, 19, "18 digits"},
		{",1234567890123456789,", 0, 0, "19 digits: the general path checks overflow"},
		{", 4,", 0, 0, "white space: the general path"},
		{",4.5,", 0, 0, "fraction"},
		{",4e3,", 0, 0, "exponent"},
		{",-,", 0, 0, "no digits"},
		{"4,", 0, 0, "no comma: the first element"},
		{",4 ,", 0, 0, "space after the number"},
	} {
		v, n := NextInt([]byte(c.in + pad))
		if v != c.v || n != c.n {
			t.Errorf("%s: NextInt(%q) = %d, %d; want %d, %d", c.why, c.in, v, n, c.v, c.n)
		}
	}
	// Ints takes the fast path on a buffer holding the whole array and
	// agrees with the general one.
	in := "[" + strings.Repeat("1,-2,30,", 2000) + "4.5]"
	if _, err := New(strings.NewReader(in)).Ints("x"); err == nil || !strings.Contains(err.Error(), "want integers, got 4.5") {
		t.Errorf("fraction after fast-path numbers: %v", err)
	}
	got, err := New(strings.NewReader(in[:len(in)-4] + "99]")).Ints("x")
	if err != nil || len(got) != 6001 || got[0] != 1 || got[1] != -2 || got[5999] != 30 || got[6000] != 99 {
		t.Errorf("Ints: %d values, err %v", len(got), err)
	}
}

// TestIntsHint: with the right length the array is read into one slice of
// that capacity; a wrong guess, smaller or larger, still reads it whole.
func TestIntsHint(t *testing.T) {
	const n = 100_000
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, i*3-7)
	}
	b.WriteByte(']')
	for _, hint := range []int{0, 10, n, 2 * n} {
		got, err := New(strings.NewReader(b.String())).IntsHint("x", hint)
		if err != nil {
			t.Fatalf("hint %d: %v", hint, err)
		}
		if len(got) != n || got[0] != -7 || got[n-1] != (n-1)*3-7 {
			t.Errorf("hint %d: %d values, first %d, last %d", hint, len(got), got[0], got[len(got)-1])
		}
		if hint == n && cap(got) != n {
			t.Errorf("right hint: capacity %d, want %d (read in one piece)", cap(got), n)
		}
	}
}

func TestSkipTokens(t *testing.T) {
	d := json.NewDecoder(strings.NewReader(`{"a":[1,{"b":[]}],"c":"d"} 7`))
	if err := SkipTokens(d.Token); err != nil {
		t.Fatal(err)
	}
	if tok, err := d.Token(); err != nil || tok != json.Number("7") && tok != 7.0 {
		t.Errorf("after the skipped value: %v, %v; want 7", tok, err)
	}
	if err := SkipTokens(json.NewDecoder(strings.NewReader(`[1,`)).Token); err == nil {
		t.Error("a truncated array was skipped without error")
	}
}

// Skip keeps nothing of a number longer than the buffer (1 MiB of digits
// against a 64 KiB buffer), and lands on the value after it; ScalarBytes,
// which returns the number, keeps it all.
func TestSkipLongScalarKeepsNothing(t *testing.T) {
	in := "[" + strings.Repeat("7", 1<<20) + ", 5]"
	s := New(strings.NewReader(in))
	if err := s.Expect('[', "an array"); err != nil {
		t.Fatal(err)
	}
	if err := s.Skip(); err != nil {
		t.Fatal(err)
	}
	if len(s.Raw) != 0 || cap(s.Raw) != 0 {
		t.Errorf("Skip kept %d bytes (capacity %d) of the number it skipped", len(s.Raw), cap(s.Raw))
	}
	if err := s.Expect(',', "a comma"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Scalar("next"); err != nil || v != "5" {
		t.Errorf("after the skipped number: %q, %v; want 5", v, err)
	}
	s = New(strings.NewReader(in))
	_ = s.Expect('[', "an array")
	if b, err := s.ScalarBytes(); err != nil || len(b) != 1<<20 {
		t.Errorf("ScalarBytes: %d bytes, %v; want the whole number", len(b), err)
	}
}
