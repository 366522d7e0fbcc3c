package jsonscan

import (
	"errors"
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
