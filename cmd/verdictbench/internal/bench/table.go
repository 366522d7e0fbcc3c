package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// table is one printed table.
type table struct {
	title, note string
	header      []string
	rows        [][]string
}

func pct(k, n int) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprintf("%d/%d (%.0f%%)", k, n, 100*float64(k)/float64(n))
}

func dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func (r *Results) tables() []table {
	alpha := r.Config.Alpha
	var ts []table
	aa := func(title, note string, rows []AARow) table {
		t := table{title: title, note: note, header: []string{"set", "gate fails", "regressed rows", "flagged most often"}}
		for _, row := range rows {
			t.rows = append(t.rows, []string{row.Set, pct(row.Fails, row.Comparisons), fmt.Sprint(row.Flagged), dash(row.Often)})
		}
		return t
	}
	ts = append(ts, aa("A/A, one profile a side",
		"Every ordered pair of the first 5 runs (20 comparisons) of identical runs. Target: at most 5% fail.", r.OneASide))
	ts = append(ts, aa("A/A, 5 vs 5",
		"20 random 5-vs-5 splits of 10 identical runs. Target: at least 19 of 20 flag nothing.", r.Splits))
	t := table{title: "A/B, a real one-function change",
		note:   "Base drawn from the A runs, head from the B runs: 20 random draws of 5 of 10 runs a side; 1 a side: the 20 ordered pairs of the first 5 runs. Target (node-lib, 5 a side): the changed function in at least 80%, anything else in at most 5%.",
		header: []string{"set", "changed function", "runs a side", "changed function flagged", "anything else flagged", "others flagged"}}
	for _, row := range r.AB {
		t.rows = append(t.rows, []string{row.Set, row.Changed, fmt.Sprint(row.RunsASide), pct(row.Named, row.Comparisons), pct(row.Others, row.Comparisons), dash(row.Often)})
	}
	ts = append(ts, t)
	t = table{title: "Whole-program slowdown",
		note:   "go-app C does the same work as A about 15% slower, every function of its own code alike (CPU +15%). Target: the gate fails.",
		header: []string{"comparison", "runs a side", "gate fails", "flagged"}}
	for _, row := range r.Whole {
		t.rows = append(t.rows, []string{row.Set, fmt.Sprint(row.RunsASide), pct(row.Fails, row.Comparisons), dash(row.Often)})
	}
	ts = append(ts, t)
	t = table{title: "Injected regressions",
		note:   fmt.Sprintf("Self time of one real function raised by +20%% or +50%% at the sample level in every head run (Binomial copies of its samples); base and head are disjoint random draws of real runs. Power: draws flagging that function as regressed. False alarms: draws flagging any other function as regressed; target at most alpha = %g.", alpha),
		header: []string{"set", "function", "share", "change", "runs a side", "draws", "power", "false alarms"}}
	for _, row := range r.Inject {
		if row.Draws == 0 {
			t.rows = append(t.rows, []string{row.Set, row.Function, fmt.Sprintf("%.2f%%", 100*row.Share), fmt.Sprintf("+%.0f%%", 100*row.Change), fmt.Sprint(row.RunsASide), "—", "—", row.Note})
			continue
		}
		t.rows = append(t.rows, []string{row.Set, row.Function, fmt.Sprintf("%.2f%%", 100*row.Share), fmt.Sprintf("+%.0f%%", 100*row.Change), fmt.Sprint(row.RunsASide), fmt.Sprint(row.Draws),
			fmt.Sprintf("%.0f%%", 100*float64(row.Power)/float64(row.Draws)), fmt.Sprintf("%.0f%%", 100*float64(row.FalseAlarms)/float64(row.Draws))})
	}
	ts = append(ts, t)
	return ts
}

func (t table) markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n%s\n\n", t.title, t.note)
	b.WriteString("| " + strings.Join(t.header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(t.header)) + "\n")
	for _, row := range t.rows {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (t table) text(w io.Writer) error {
	fmt.Fprintf(w, "%s\n%s\n\n", t.title, t.note)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	for _, row := range t.rows {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}
