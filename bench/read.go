package bench

import (
	"errors"
	"fmt"
	"github.com/hotbudget/hotbudget/internal/textfmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/hotbudget/hotbudget/diff"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchproc"
)

// Reading go test -bench output for bench: keys, configurations and their
// mismatches between the two sides.

// keyRE is a key benchproc projects on its own: a file configuration
// key or a sub-name key, without sort orders or filters.
var keyRE = regexp.MustCompile(`^/?[a-z][^\s:,@()"*/]*$`)

type key struct {
	config     benchproc.Key
	name, unit string
}

type side struct {
	vals map[key][]float64
	runs int // most runs of any benchmark
}

// reader projects results of both sides on the same keys.
type reader struct {
	config, name *benchproc.Projection
	nameField    *benchproc.Field
	units        map[string]int // order of first appearance
}

func newReader(ignore []string) (*reader, error) {
	var p benchproc.ProjectionParser
	filter, err := benchproc.NewFilter("*")
	if err != nil {
		return nil, err
	}
	config, err := p.Parse(".config", filter)
	if err != nil {
		return nil, err
	}
	name, err := p.Parse(".fullname", filter)
	if err != nil {
		return nil, err
	}
	for _, k := range ignore {
		if err := checkIgnore(k); err != nil {
			return nil, err
		}
		// Parsed keys are excluded from .config and .fullname.
		if _, err := p.Parse(k, filter); err != nil {
			return nil, fmt.Errorf("bench: ignoring %q: %w", k, err)
		}
	}
	return &reader{config: config, name: name, nameField: name.Fields()[0], units: map[string]int{}}, nil
}

// configMap is k's configuration, blank values left out.
func (br *reader) configMap(k benchproc.Key) map[string]string {
	m := map[string]string{}
	for _, f := range br.config.FlattenedFields() {
		if v := strings.TrimSpace(k.Get(f)); v != "" {
			m[f.Name] = v
		}
	}
	return m
}

// read reads one benchfmt stream; higher lists the units declared
// better=higher.
func (br *reader) read(name string, r io.Reader) (*side, map[string]bool, error) {
	if r == nil {
		return nil, nil, fmt.Errorf("bench: no %s benchmark input", name)
	}
	rd := benchfmt.NewReader(r, name)
	sd := &side{vals: map[key][]float64{}}
	var syntax []string
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.Result:
			cfg := br.config.Project(rec)
			full := br.name.Project(rec).Get(br.nameField)
			for _, v := range rec.Values {
				// go test prints finite numbers; a NaN would hang the
				// Mann-Whitney test (go-moremath's U test never ends with
				// one) and mean nothing in a median.
				if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
					return nil, nil, fmt.Errorf("bench: %s benchmarks: %s: %v %s is not a finite number", name, textfmt.Name("Benchmark"+string(rec.Name)), v.Value, textfmt.Name(v.Unit))
				}
				if _, ok := br.units[v.Unit]; !ok {
					br.units[v.Unit] = len(br.units)
				}
				k := key{cfg, full, v.Unit}
				sd.vals[k] = append(sd.vals[k], v.Value)
				sd.runs = max(sd.runs, len(sd.vals[k]))
			}
		case *benchfmt.SyntaxError:
			syntax = append(syntax, rec.Error())
		}
	}
	if err := rd.Err(); err != nil {
		return nil, nil, fmt.Errorf("bench: reading %s benchmarks: %w", name, err)
	}
	if len(sd.vals) == 0 {
		msg := fmt.Sprintf("bench: %s has no benchmark results", name)
		if len(syntax) > 0 {
			msg += ": " + syntax[0]
		}
		return nil, nil, errors.New(msg)
	}
	higher := map[string]bool{}
	for k, m := range rd.Units() {
		if k.Key == "better" && m.Value == "higher" {
			higher[k.Unit] = true
		}
	}
	return sd, higher, nil
}

// configMismatch explains benchmarks found on one side only because their
// configuration differs between the sides (another machine, another Go
// version): they are new and gone instead of compared.
func configMismatch(rows []Row) []string {
	type pair struct{ base, head string }
	diffs := map[string]map[pair]bool{}
	gone := map[string][]map[string]string{}
	for _, row := range rows {
		if row.Verdict == diff.Gone {
			gone[row.Name+" "+row.Unit] = append(gone[row.Name+" "+row.Unit], row.Config)
		}
	}
	n := 0
	for _, row := range rows {
		if row.Verdict != diff.New {
			continue
		}
		found := false
		for _, bc := range gone[row.Name+" "+row.Unit] {
			for _, k := range configKeys(bc, row.Config) {
				if bc[k] == row.Config[k] || k == "pkg" && bc[k] != "" && row.Config[k] != "" {
					continue // another package's benchmark of the same name
				}
				if diffs[k] == nil {
					diffs[k] = map[pair]bool{}
				}
				diffs[k][pair{bc[k], row.Config[k]}] = true
				found = true
			}
		}
		if found {
			n++
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	var keys, parts []string
	for k := range diffs {
		keys = append(keys, k)
	}
	sortConfigKeys(keys)
	for _, k := range keys {
		var ps []string
		for p := range diffs[k] {
			ps = append(ps, fmt.Sprintf("%q in base, %q in head", p.base, p.head))
		}
		sort.Strings(ps)
		parts = append(parts, k+" "+strings.Join(ps, "; "))
	}
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = strconv.Quote(k)
	}
	return []string{fmt.Sprintf("%d benchmark results are on one side only because their configuration differs (%s): they are not compared; ignore the key to compare them anyway (benchstat's -ignore; bench.WithIgnore(%s))",
		n, strings.Join(parts, ", "), strings.Join(quoted, ", "))}
}

// configKeys lists the keys of the maps in the usual order.
func configKeys(ms ...map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sortConfigKeys(keys)
	return keys
}

// sortConfigKeys sorts keys in the order `go test` prints them, then
// alphabetically.
func sortConfigKeys(keys []string) {
	rank := map[string]int{"goos": 1, "goarch": 2, "pkg": 3, "cpu": 4}
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := rank[keys[i]], rank[keys[j]]
		if ri == 0 {
			ri = len(rank) + 1
		}
		if rj == 0 {
			rj = len(rank) + 1
		}
		if ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
}

// configString is m in a fixed order, for sorting and grouping.
func configString(m map[string]string) string {
	var b strings.Builder
	for _, k := range configKeys(m) {
		fmt.Fprintf(&b, "%s\x00%s\x00", k, m[k])
	}
	return b.String()
}
