package speedscope

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/hotbudget/hotbudget/internal/jsonscan"
)

type reader struct {
	d *json.Decoder
}

func (r *reader) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", r.d.InputOffset(), fmt.Sprintf(format, args...))
}

// truncated reports whether err says the input ended inside a value: io.EOF
// or io.ErrUnexpectedEOF from Go 1.26's decoder, a *json.SyntaxError
// "unexpected end of JSON input" from Go 1.27's (encoding/json on
// encoding/json/v2).
func truncated(err error) bool {
	var se *json.SyntaxError
	return err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &se) && strings.Contains(se.Error(), "unexpected end of JSON input")
}

func (r *reader) token() (json.Token, error) {
	t, err := r.d.Token()
	if truncated(err) {
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
	if truncated(err) {
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
