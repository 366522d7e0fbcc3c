// Package htmlreport writes a profile report as one self-contained HTML
// page: a headline verdict, a table of functions (with the explanation of
// each changed one) and a flame graph drawn on a canvas by our own
// JavaScript, embedded with go:embed. The page needs no network: the
// styles, the script and the data are all inside it.
//
// The flame graph is an icicle (the root on top): width is time, and in a
// comparison colour is the change of the compared metric (red slower, blue
// faster, faded where the change is within the noise or too small to
// test), with the frames of judged functions outlined and flagged. A click
// zooms into a frame; the search box highlights the frames whose name
// matches a regular expression; hovering shows a frame's self and total
// time on each side, its change and p-value. Frames narrower than two
// pixels are drawn as one grey block per parent, so that drawing costs
// what is visible, not what the profile holds; the data itself is bounded
// by TreeBuilder.Tree.
//
// The script exposes its state as window.__hotbudget for tests (ready,
// nodes, drawn, aggregated, matches, zoomed, marked, frameRect(name)).
//
// The package depends on no public package of the module: callers build
// the plain data model (Report, Tree) from their profiles.
package htmlreport

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"

	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// Report is everything one page shows.
type Report struct {
	// Title names the page ("hotbudget diff").
	Title string
	// Headline is the verdict in one sentence; Status colours it:
	// "fail", "pass" or "info".
	Headline string
	Status   string
	// Details are lines under the headline: the sides, what was compared.
	Details  []string
	Warnings []string
	Table    Table
	// Tree is the flame graph's call tree; nil for none.
	Tree *Tree
	// Generator names the tool that wrote the page, in its footer.
	Generator string
}

// Table is the page's table of functions.
type Table struct {
	// Columns are the headers. Cells of the column named by NameColumn
	// are function names: a click searches the flame graph for them (-1:
	// no such column).
	Columns    []string
	NameColumn int
	// Numeric marks the columns aligned right.
	Numeric []bool
	Rows    []Row
	// Note follows the table ("26 unchanged functions not shown").
	Note string
}

// Row is one function.
type Row struct {
	Cells []string
	// Verdict styles the row: "regressed", "improved", "new", "gone" or
	// "unchanged".
	Verdict string
	Explain *Explain
}

// Explain is a function's change split over call paths, shown folded
// under its row.
type Explain struct {
	Summary string
	Columns []string
	Paths   []ExplainPath
}

// ExplainPath is one row of an explanation.
type ExplainPath struct {
	Cells   []string
	Verdict string
}

//go:embed assets/report.html.tmpl
var pageTemplate string

//go:embed assets/report.css
var css string

//go:embed assets/flame.js
var script string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"numeric": func(t Table, i int) bool { return i < len(t.Numeric) && t.Numeric[i] },
}).Parse(pageTemplate))

// MaxName is how many characters of a function name the page holds
// (textfmt.Shorten): a name from a profile may be as long as the profile,
// and the page repeats it in the table, the flame graph's data and the
// search pattern a click on it makes.
const MaxName = 1000

// Write writes r as one HTML page. Function names longer than MaxName are
// shortened, in the table and in the flame graph alike.
func Write(w io.Writer, r *Report) error {
	data := r.Tree.encode()
	if t := r.Table; t.NameColumn >= 0 {
		short := *r
		short.Table.Rows = make([]Row, len(t.Rows))
		for i, row := range t.Rows {
			if t.NameColumn < len(row.Cells) && len(row.Cells[t.NameColumn]) > MaxName {
				row.Cells = append([]string(nil), row.Cells...)
				row.Cells[t.NameColumn] = textfmt.Shorten(row.Cells[t.NameColumn], MaxName)
			}
			short.Table.Rows[i] = row
		}
		r = &short
	}
	var buf bytes.Buffer
	err := page.Execute(&buf, struct {
		*Report
		CSS    template.CSS
		Script template.JS
		Data   template.JS
	}{r, template.CSS(css), template.JS(script), template.JS(data)})
	if err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// encode writes the tree as the JSON object the script reads: columns of
// numbers rather than an object per frame, values as integers of a fixed
// fraction of the root (Tree.scale), so that a tree of 200,000 frames
// stays a few megabytes and parses in tens of milliseconds. Strings are
// escaped by encoding/json, which escapes <, > and &, so the text is safe
// inside a script element.
func (t *Tree) encode() []byte {
	var b bytes.Buffer
	if t == nil {
		return []byte("null")
	}
	// Values are integers: root = 1e8 (or less for an empty tree).
	max := 0.0
	if len(t.Nodes) > 0 {
		max = math.Max(t.Nodes[0].Base.Total, t.Nodes[0].Head.Total)
	}
	mult := 1.0
	if max > 0 {
		mult = 1e8 / max
	}
	str := func(v any) {
		j, _ := json.Marshal(v)
		b.Write(j)
	}
	b.WriteString(`{"diff":`)
	str(t.Diff)
	b.WriteString(`,"unit":`)
	str(t.Unit)
	b.WriteString(`,"metric":`)
	str(t.Metric)
	b.WriteString(`,"minChange":`)
	b.WriteString(num(t.MinChange))
	b.WriteString(`,"runs":`)
	b.WriteString(strconv.Itoa(t.Runs))
	b.WriteString(`,"pruned":`)
	b.WriteString(strconv.Itoa(t.Pruned))
	b.WriteString(`,"mult":`)
	b.WriteString(strconv.FormatFloat(mult, 'g', -1, 64))
	names := map[string]int{}
	var list []string
	nameIdx := make([]int, len(t.Nodes))
	for i, n := range t.Nodes {
		id, ok := names[n.Name]
		if !ok {
			id = len(list)
			names[n.Name] = id
			list = append(list, textfmt.Shorten(n.Name, MaxName))
		}
		nameIdx[i] = id
	}
	b.WriteString(`,"names":`)
	if list == nil {
		list = []string{}
	}
	str(list)
	b.WriteString(`,"marks":`)
	marks := map[string]string{}
	for name, v := range t.Marks {
		if id, ok := names[name]; ok {
			marks[strconv.Itoa(id)] = v
		}
	}
	str(marks)
	ints := func(key string, f func(i int) int) {
		b.WriteString(`,"` + key + `":[`)
		for i := range t.Nodes {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(f(i)))
		}
		b.WriteByte(']')
	}
	vals := func(key string, f func(n *Node) float64) {
		ints(key, func(i int) int { return int(math.Round(f(&t.Nodes[i]) * mult)) })
	}
	ints("name", func(i int) int { return nameIdx[i] })
	ints("depth", func(i int) int { return t.Nodes[i].Depth })
	ints("others", func(i int) int { return t.Nodes[i].Others })
	vals("hs", func(n *Node) float64 { return n.Head.Self })
	vals("ht", func(n *Node) float64 { return n.Head.Total })
	if t.Diff {
		vals("bs", func(n *Node) float64 { return n.Base.Self })
		vals("bt", func(n *Node) float64 { return n.Base.Total })
		// Change is head/(scale*base) - 1 of the values: the script
		// computes it from the scale; tested frames carry theirs below.
		b.WriteString(`,"scale":`)
		b.WriteString(strconv.FormatFloat(t.Scale, 'g', -1, 64))
		// Tested frames only: their index, p, q and whether the change
		// counts.
		b.WriteString(`,"tested":{"i":[`)
		first := true
		var ps, qs, chs, sig, notes bytes.Buffer
		for i, n := range t.Nodes {
			if math.IsNaN(n.P) {
				continue
			}
			if !first {
				b.WriteByte(',')
				ps.WriteByte(',')
				qs.WriteByte(',')
				chs.WriteByte(',')
				sig.WriteByte(',')
			}
			first = false
			b.WriteString(strconv.Itoa(i))
			ps.WriteString(num(n.P))
			qs.WriteString(num(n.Q))
			switch {
			case math.IsInf(n.Change, 1):
				chs.WriteString("1e9")
			case math.IsNaN(n.Change) || math.IsInf(n.Change, -1):
				chs.WriteString("null")
			default:
				chs.WriteString(strconv.FormatFloat(n.Change, 'g', 4, 64))
			}
			if n.Significant {
				sig.WriteByte('1')
			} else {
				sig.WriteByte('0')
			}
			if n.Note != "" {
				if notes.Len() > 0 {
					notes.WriteByte(',')
				}
				k, _ := json.Marshal(strconv.Itoa(i))
				v, _ := json.Marshal(textfmt.Shorten(n.Note, 4*MaxName))
				notes.Write(k)
				notes.WriteByte(':')
				notes.Write(v)
			}
		}
		fmt.Fprintf(&b, `],"p":[%s],"q":[%s],"change":[%s],"sig":[%s],"note":{%s}}`, ps.Bytes(), qs.Bytes(), chs.Bytes(), sig.Bytes(), notes.Bytes())
	}
	b.WriteByte('}')
	return b.Bytes()
}

// num writes a finite number compactly (4 significant digits), 0 for
// NaN and infinities.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
