package diff_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/analysis"
	"github.com/hotbudget/hotbudget/diff"
	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// agreeRow is one function's figures as one writer shows them.
type agreeRow struct{ base, head, change, p, verdict string }

// TestWritersAgree judges ten real comparisons (Go and Node, one and
// several runs a side, from testdata) and holds the text, Markdown, JSON
// and HTML reports to the same figures: each function's base and head
// share, its change, p and verdict, and the counts of the summary. The
// shares shown are the sides' real shares: over every function they sum
// to 100% of the self time, and for one Go profile a side they are go
// tool pprof -top's flat% (the default charging of runtime.asyncPreempt
// to its caller turned off for that check). The flame graph marks every
// function the table judged regressed, and never draws a frame of one as
// within the noise without a note saying why.
func TestWritersAgree(t *testing.T) {
	cases := []struct {
		name, base, head string
		pprof            bool // one Go profile a side: check against go tool pprof -top
	}{
		{"go regress 5v5", "regress/base-*.pb.gz", "regress/head-*.pb.gz", false},
		{"go regress 1v1", "regress/base-1.pb.gz", "regress/head-1.pb.gz", true},
		{"go-app A/B 5v5", "verdict/go-app/A-0[1-5].pb.gz", "verdict/go-app/B-0[1-5].pb.gz", false},
		{"go-app A/B 1v1", "verdict/go-app/A-01.pb.gz", "verdict/go-app/B-01.pb.gz", true},
		{"go-app A/C 5v5", "verdict/go-app/A-0[1-5].pb.gz", "verdict/go-app/C-0[1-5].pb.gz", false},
		{"go-other A/A 5v5", "verdict/go-other/A-0[1-5].pb.gz", "verdict/go-other/A-0[6-9].pb.gz", false},
		{"go record 5v5", "record/base/*.pb.gz", "record/head/*.pb.gz", false},
		{"node-lib A/B 5v5", "verdict/node-lib/A-1000us-0[1-5].cpuprofile.gz", "verdict/node-lib/B-1000us-0[1-5].cpuprofile.gz", false},
		{"node-lib A/B 1v1", "verdict/node-lib/A-100us-01.cpuprofile.gz", "verdict/node-lib/B-100us-01.cpuprofile.gz", false},
		{"node-other A/A 3v3", "verdict/node-other/A-1000us-0[1-3].cpuprofile.gz", "verdict/node-other/A-1000us-0[4-6].cpuprofile.gz", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base, head := loadGlob(t, "../testdata/"+c.base), loadGlob(t, "../testdata/"+c.head)
			rep, err := diff.Compare(base, head)
			if err != nil {
				t.Fatal(err)
			}
			var text, md, js, page bytes.Buffer
			for _, w := range []struct {
				buf   *bytes.Buffer
				write func(*bytes.Buffer) error
			}{
				{&text, func(b *bytes.Buffer) error { return rep.Write(b, "text") }},
				{&md, func(b *bytes.Buffer) error { return rep.Write(b, "markdown") }},
				{&js, func(b *bytes.Buffer) error { return rep.Write(b, "json") }},
				{&page, func(b *bytes.Buffer) error { return rep.Write(b, "html") }},
			} {
				if err := w.write(w.buf); err != nil {
					t.Fatal(err)
				}
			}
			checkAgreement(t, rep, text.String(), md.String(), js.Bytes(), page.String())
			if c.pprof {
				checkPprofShares(t, "../testdata/"+c.base, "../testdata/"+c.head, base, head)
			}
		})
	}
}

func checkAgreement(t *testing.T, rep *diff.Report, text, md string, js []byte, page string) {
	t.Helper()
	var doc struct {
		Regressed, Improved, New, Gone, Judged int
		Functions                              []struct {
			Name       string
			Base, Head struct {
				SelfShare float64 `json:"self_share"`
			}
			Relative float64
			P        float64
			Verdict  string
		}
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	// The JSON, the one machine-readable source: each row's figures as
	// the writers must show them.
	want := map[string]agreeRow{}
	var sumBase, sumHead float64
	counts := map[string]int{}
	for _, f := range doc.Functions {
		sumBase += f.Base.SelfShare
		sumHead += f.Head.SelfShare
		counts[f.Verdict]++
		change := fmt.Sprintf("%+.1f%%", 100*f.Relative)
		switch {
		case f.Verdict == "new", f.Verdict == "gone":
			change = f.Verdict
		case f.Relative == 0 && (f.Base.SelfShare == 0 || f.Head.SelfShare == 0):
			change = "~"
		}
		if _, dup := want[f.Name]; !dup {
			want[f.Name] = agreeRow{textfmt.Percent(f.Base.SelfShare), textfmt.Percent(f.Head.SelfShare), change, "", f.Verdict}
		}
	}
	// Shares sum to what they cover: every function's self time.
	if math.Abs(sumBase-1) > 1e-6 || math.Abs(sumHead-1) > 1e-6 { // means of whole nanoseconds
		t.Errorf("self shares sum to %.9f base, %.9f head, want 1", sumBase, sumHead)
	}
	if counts["regressed"] != doc.Regressed || counts["improved"] != doc.Improved || counts["new"] != doc.New || counts["gone"] != doc.Gone {
		t.Errorf("JSON counts %d/%d/%d/%d, its rows %v", doc.Regressed, doc.Improved, doc.New, doc.Gone, counts)
	}
	if doc.Judged != rep.Judged() || doc.Judged < doc.Regressed+doc.Improved {
		t.Errorf("JSON judged %d, report %d, %d regressed and %d improved", doc.Judged, rep.Judged(), doc.Regressed, doc.Improved)
	}
	check := func(writer, name string, got agreeRow) {
		t.Helper()
		w, ok := want[name]
		if !ok {
			if !plain(name) {
				return // a name escaped or shortened for its output
			}
			t.Errorf("%s: row %q not in the JSON", writer, name)
			return
		}
		got.p = ""
		if got != w {
			t.Errorf("%s: %s shows %+v, JSON %+v", writer, name, got, w)
		}
	}
	// Text: the table between its header and the first blank line.
	rows, odd := 0, 0
	inTable := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && f[0] == "base" && f[1] == "head":
			inTable = true
			continue
		case !inTable:
			continue
		case len(f) < 6 || strings.HasPrefix(line, "("):
			inTable = false
			continue
		}
		// base head change(or "vs rest") p verdict name
		check("text", strings.Join(f[5:], " "), agreeRow{f[0], f[1], f[2], "", f[4]})
		rows++
		if !plain(strings.Join(f[5:], " ")) {
			odd++
		}
	}
	if rows == 0 {
		t.Errorf("no rows in the text table:\n%s", text)
	}
	// Markdown: | `name` | base | head | change | p | verdict |
	mdRow := regexp.MustCompile("(?m)^\\| `([^`]*)` \\| ([^|]+) \\| ([^|]+) \\| ([^|]+) \\| ([^|]+) \\| ([a-z]+) \\|$")
	mrows := mdRow.FindAllStringSubmatch(md, -1)
	for _, m := range mrows {
		check("markdown", strings.ReplaceAll(m[1], `\|`, "|"), agreeRow{m[2], m[3], m[4], "", m[6]})
	}
	if len(mrows) < min(rows, 50)-odd { // unchanged rows folded, at most 50
		t.Errorf("Markdown shows %d rows, text %d", len(mrows), rows)
	}
	// HTML: the table's rows.
	cell := regexp.MustCompile(`<td[^>]*>(?:<a [^>]*>)?([^<]*)`)
	hrows := 0
	for _, tr := range regexp.MustCompile(`<tr class="hb-row hb-v-[a-z]+">(.*?)</tr>`).FindAllStringSubmatch(page, -1) {
		var cells []string
		for _, m := range cell.FindAllStringSubmatch(tr[1], -1) {
			cells = append(cells, html.UnescapeString(m[1]))
		}
		if len(cells) != 6 {
			t.Fatalf("HTML row of %d cells: %s", len(cells), tr[1])
		}
		check("html", cells[0], agreeRow{cells[1], cells[2], cells[3], "", cells[5]})
		hrows++
	}
	if hrows < min(rows, 200) { // at most 200 unchanged rows
		t.Errorf("HTML shows %d rows, text %d", hrows, rows)
	}
	// The counts: one summary in every writer.
	var sumb strings.Builder
	if err := rep.Write(&sumb, "summary"); err != nil {
		t.Fatal(err)
	}
	sum := strings.TrimSuffix(sumb.String(), "\n")
	wantSum := fmt.Sprintf("among %d functions judged of %d compared", doc.Judged, len(doc.Functions))
	if doc.Regressed > 0 {
		wantSum = fmt.Sprintf("%d of %d functions judged regressed", doc.Regressed, doc.Judged)
	}
	if !strings.Contains(sum, wantSum) {
		t.Errorf("summary %q, want %q", sum, wantSum)
	}
	for writer, out := range map[string]string{"text": text, "markdown": md, "html": html.UnescapeString(page)} {
		if !strings.Contains(out, wantSum) {
			t.Errorf("%s lacks the summary's count %q", writer, wantSum)
		}
	}
	checkFlame(t, rep, page)
}

// plain reports whether a function name is written as itself in every
// output (no character any of them escapes, not shortened).
func plain(name string) bool {
	return len(name) < 100 && regexp.MustCompile(`^[A-Za-z0-9_./()*$:\[\] -]+$`).MatchString(name)
}

// checkFlame reads the flame graph's data from the page: every regressed
// function is marked, and a tested frame of a function judged regressed
// or improved is either counted or carries a note.
func checkFlame(t *testing.T, rep *diff.Report, page string) {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="hb-data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no flame graph data in the page")
	}
	var d struct {
		Names  []string
		Marks  map[string]string
		Name   []int
		Tested struct {
			I    []int
			Sig  []int
			Note map[string]string
		}
	}
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatal(err)
	}
	marked := map[string]string{}
	for id, v := range d.Marks {
		i, _ := strconv.Atoi(id)
		marked[d.Names[i]] = v
	}
	for _, row := range rep.Regressions() {
		if marked[row.Name] != "regressed" {
			t.Errorf("flame graph: %s regressed in the table, marked %q", row.Name, marked[row.Name])
		}
	}
	for k, i := range d.Tested.I {
		name := d.Names[d.Name[i]]
		v := marked[name]
		if (v == "regressed" || v == "improved") && d.Tested.Sig[k] == 0 && d.Tested.Note[strconv.Itoa(i)] == "" {
			t.Errorf("flame graph: a frame of %s (%s in the table) drawn within the noise with no note", name, v)
		}
		if d.Tested.Sig[k] == 1 && v != "regressed" && v != "improved" {
			t.Errorf("flame graph: a frame of %s counted as changed, the table says %q", name, v)
		}
	}
}

// checkPprofShares holds the shares of one profile a side to go tool
// pprof -top's flat%, with nothing charged to callers as pprof does not.
func checkPprofShares(t *testing.T, basePath, headPath string, base, head []*profile.Profile) {
	t.Helper()
	rep, err := diff.Compare(base, head, diff.WithSelection(analysis.Selection{}))
	if err != nil {
		t.Fatal(err)
	}
	for side, path := range []string{basePath, headPath} {
		out, err := testutil.PprofCmd("-top", "-nodecount=100000", "-nodefraction=0", "-edgefraction=0", path).Output()
		if err != nil {
			t.Fatalf("go tool pprof: %v", err)
		}
		flat := map[string]string{}
		line := regexp.MustCompile(`(?m)^\s*\S+\s+(\d+(?:\.\d+)?)%\s+\S+%\s+\S+\s+\S+%\s+(.+)$`)
		for _, m := range line.FindAllStringSubmatch(string(out), -1) {
			// pprof drops trailing zeros: 0.4% is 0.40%.
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			flat[strings.TrimSpace(m[2])] = fmt.Sprintf("%.2f%%", v)
		}
		if len(flat) == 0 {
			t.Fatalf("no rows in go tool pprof's output:\n%s", out)
		}
		n := 0
		for _, row := range rep.Rows {
			b, h := rep.ShownValues(row)
			v := []float64{b, h}[side]
			p, ok := flat[row.Name]
			if !ok || v == 0 {
				continue
			}
			n++
			if got := textfmt.Percent(v); got != p {
				t.Errorf("%s %s: share %s, go tool pprof -top flat%% %s", []string{"base", "head"}[side], row.Name, got, p)
			}
		}
		if n < 3 {
			t.Errorf("%d functions compared with go tool pprof", n)
		}
	}
}
