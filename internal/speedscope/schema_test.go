package speedscope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/testutil"
)

// schemaDef is the part of a JSON-schema definition the check uses.
type schemaDef struct {
	Type       string               `json:"type"`
	Const      any                  `json:"const"`
	Required   []string             `json:"required"`
	Properties map[string]schemaDef `json:"properties"`
	Items      *schemaDef           `json:"items"`
	Ref        string               `json:"$ref"`
	Enum       []any                `json:"enum"`
}

// checkSchema checks v against def: types, consts, enums, required keys and
// nested properties and items. anyOf is not needed for what Write produces:
// the caller picks the profile definition.
func checkSchema(defs map[string]schemaDef, def schemaDef, v any, path string) error {
	if def.Ref != "" {
		name := filepath.Base(def.Ref)
		d, ok := defs[name]
		if !ok {
			return fmt.Errorf("%s: unknown $ref %s", path, def.Ref)
		}
		def = d
	}
	switch def.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an object", path, v)
		}
		for _, k := range def.Required {
			if _, ok := m[k]; !ok {
				return fmt.Errorf("%s: missing required %q", path, k)
			}
		}
		for k, pd := range def.Properties {
			if x, ok := m[k]; ok {
				if err := checkSchema(defs, pd, x, path+"."+k); err != nil {
					return err
				}
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an array", path, v)
		}
		if def.Items != nil {
			for i, x := range a {
				if err := checkSchema(defs, *def.Items, x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: %T, want a number", path, v)
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: %T, want a string", path, v)
		}
	}
	if def.Const != nil && def.Const != v {
		return fmt.Errorf("%s: %v, want %v", path, v, def.Const)
	}
	if def.Enum != nil {
		found := false
		for _, e := range def.Enum {
			found = found || e == v
		}
		if !found {
			return fmt.Errorf("%s: %v not in %v", path, v, def.Enum)
		}
	}
	return nil
}

// What Write produces satisfies speedscope's own schema, with sampled
// profiles whose samples and weights line up.
func TestWriteMatchesSchema(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(golden, "file-format-schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs map[string]schemaDef `json:"definitions"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	pp := testutil.ReadPprof(t, "../../testdata/corpus/pprof/sample.cpu")
	for name, p := range map[string]*profile.Profile{"hand": handProfile(), "sample.cpu": pp} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, p); err != nil {
				t.Fatal(err)
			}
			var doc map[string]any // a test-size document
			if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if err := checkSchema(schema.Defs, schema.Defs["FileFormat.File"], doc, "file"); err != nil {
				t.Fatal(err)
			}
			profs := doc["profiles"].([]any)
			if len(profs) == 0 {
				t.Fatal("no profiles")
			}
			nframes := len(doc["shared"].(map[string]any)["frames"].([]any))
			for i, x := range profs {
				path := fmt.Sprintf("profiles[%d]", i)
				if err := checkSchema(schema.Defs, schema.Defs["FileFormat.SampledProfile"], x, path); err != nil {
					t.Fatal(err)
				}
				m := x.(map[string]any)
				samples, weights := m["samples"].([]any), m["weights"].([]any)
				if len(samples) != len(weights) {
					t.Errorf("%s: %d samples, %d weights", path, len(samples), len(weights))
				}
				var sum float64
				for _, w := range weights {
					sum += w.(float64)
				}
				if sum != m["endValue"].(float64)-m["startValue"].(float64) {
					t.Errorf("%s: weights sum to %v, span is %v..%v", path, sum, m["startValue"], m["endValue"])
				}
				for si, s := range samples {
					for _, fi := range s.([]any) {
						if n := int(fi.(float64)); n < 0 || n >= nframes {
							t.Errorf("%s: sample %d: frame %d out of range", path, si, n)
						}
					}
				}
			}
		})
	}
}
