package v8

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// ErrNoID is DecodeNode's error for a node without an id.
var ErrNoID = errors.New("node has no id")

// DecodeNode decodes one element of a profile's nodes array (as written by
// V8, Node, DevTools and Chrome's ProfileChunk events): raw is the JSON
// object. Missing line and column numbers become -1, a numeric scriptId
// its decimal text. intern, when not nil, may return a shared copy of each
// string. The .cpuprofile and Chrome trace readers both decode nodes here.
func DecodeNode(raw []byte, intern func(string) string) (Node, error) {
	var jn jsonNode
	if err := json.Unmarshal(raw, &jn); err != nil {
		if errors.As(err, new(notStringOrNumber)) {
			return Node{}, fmt.Errorf("scriptId: %w", err) // a node's only such field
		}
		return Node{}, err
	}
	if jn.ID == nil {
		return Node{}, ErrNoID
	}
	if intern == nil {
		intern = func(s string) string { return s }
	}
	n := Node{
		ID:       *jn.ID,
		Children: jn.Children,
		HitCount: jn.HitCount,
		CallFrame: CallFrame{
			FunctionName: intern(jn.CallFrame.FunctionName),
			ScriptID:     intern(string(jn.CallFrame.ScriptID)),
			URL:          intern(jn.CallFrame.URL),
			LineNumber:   orMinus1(jn.CallFrame.LineNumber),
			ColumnNumber: orMinus1(jn.CallFrame.ColumnNumber),
		},
	}
	if jn.Parent != nil {
		n.Parent, n.HasParent = *jn.Parent, true
	}
	return n, nil
}

type jsonNode struct {
	ID        *int64        `json:"id"`
	CallFrame jsonCallFrame `json:"callFrame"`
	Parent    *int64        `json:"parent"`
	Children  []int64       `json:"children"`
	HitCount  int64         `json:"hitCount"`
}

type jsonCallFrame struct {
	FunctionName string         `json:"functionName"`
	ScriptID     StringOrNumber `json:"scriptId"`
	URL          string         `json:"url"`
	LineNumber   *int64         `json:"lineNumber"`
	ColumnNumber *int64         `json:"columnNumber"`
}

// StringOrNumber is a JSON value that may be a string or a number (V8's
// scriptId, the fields of Hermes' samples), kept as its text: the string's
// contents, or the number as written. null leaves it empty.
type StringOrNumber string

// UnmarshalJSON implements json.Unmarshaler.
func (s *StringOrNumber) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = StringOrNumber(v)
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	if _, err := strconv.ParseFloat(string(b), 64); err != nil {
		return notStringOrNumber(b)
	}
	*s = StringOrNumber(b)
	return nil
}

// notStringOrNumber is the error of a StringOrNumber given another value.
type notStringOrNumber string

func (e notStringOrNumber) Error() string {
	return fmt.Sprintf("want a string or a number, got %.20s", string(e))
}

func orMinus1(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
