package budget

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// lineError is a syntax error at a line; Error gives "line: msg" so that Parse
// prefixes the file name.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("%d: %s", e.line, e.msg) }

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func yamlNode(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, &lineError{1, "empty budget file"}
		}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			n, _ := strconv.Atoi(m[1])
			return nil, &lineError{n, "invalid YAML: " + m[2]}
		}
		return nil, &lineError{1, "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var next yaml.Node
	if err := dec.Decode(&next); err != io.EOF {
		line := next.Line
		if line == 0 {
			line = 1
		}
		return nil, &lineError{line, "a budget file holds one YAML document"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &lineError{1, "empty budget file"}
	}
	return doc.Content[0], nil
}

// maxJSONDepth bounds nesting in a JSON budget (the schema needs 4).
const maxJSONDepth = 16

// jsonNode reads JSON into the same node tree yaml.v3 builds, with line
// numbers computed from the decoder's offsets, streaming token by token.
func jsonNode(data []byte) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	lines := lineCounter{data: data, line: 1}
	start := func() int {
		off := int(dec.InputOffset())
		for off < len(data) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
			off++
		}
		return lines.at(off)
	}
	var stack []*yaml.Node
	var root *yaml.Node
	for {
		line := start()
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return nil, &lineError{lines.at(int(se.Offset)), "invalid JSON: " + se.Error()}
			}
			return nil, &lineError{line, "invalid JSON: " + err.Error()}
		}
		var n *yaml.Node
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= maxJSONDepth {
					return nil, &lineError{line, fmt.Sprintf("JSON nested deeper than %d levels", maxJSONDepth)}
				}
				kind := yaml.MappingNode
				if t == '[' {
					kind = yaml.SequenceNode
				}
				n = &yaml.Node{Kind: kind, Line: line}
			default:
				stack = stack[:len(stack)-1]
				continue
			}
		case string:
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t, Line: line}
		case json.Number:
			tag := "!!int"
			if strings.ContainsAny(string(t), ".eE") {
				tag = "!!float"
			}
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(t), Line: line}
		case bool:
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t), Line: line}
		case nil:
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: line}
		}
		if len(stack) == 0 {
			if root != nil {
				return nil, &lineError{line, "invalid JSON: more than one value"}
			}
			root = n
		} else {
			parent := stack[len(stack)-1]
			parent.Content = append(parent.Content, n)
		}
		if n.Kind != yaml.ScalarNode {
			stack = append(stack, n)
		}
	}
	if root == nil {
		return nil, &lineError{1, "empty budget file"}
	}
	return root, nil
}

// lineCounter turns increasing byte offsets into 1-based line numbers.
type lineCounter struct {
	data      []byte
	off, line int
}

func (c *lineCounter) at(off int) int {
	off = min(off, len(c.data))
	if off < c.off { // offsets only grow, except in syntax errors
		c.off, c.line = 0, 1
	}
	c.line += bytes.Count(c.data[c.off:off], []byte("\n"))
	c.off = off
	return c.line
}
