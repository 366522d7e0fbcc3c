package textfmt

import (
	"strings"
	"testing"
)

func TestMarkdownFolded(t *testing.T) {
	var b strings.Builder
	MarkdownFolded(&b, []int(nil), "rows", "first", func([]int) { t.Error("table of no rows written") })
	if b.Len() != 0 {
		t.Errorf("no rows wrote %q", b.String())
	}
	rows := make([]int, 51)
	got := 0
	MarkdownFolded(&b, rows, "unchanged functions", "largest", func(r []int) { got = len(r); b.WriteString("TABLE") })
	if want := "<details><summary>51 unchanged functions, largest 50 shown</summary>\n\nTABLE\n</details>\n"; b.String() != want || got != 50 {
		t.Errorf("51 rows: %q with %d rows, want %q with 50", b.String(), got, want)
	}
	b.Reset()
	MarkdownFolded(&b, rows[:2], "results", "first", func(r []int) { got = len(r) })
	if want := "<details><summary>2 results</summary>\n\n\n</details>\n"; b.String() != want || got != 2 {
		t.Errorf("2 rows: %q with %d rows, want %q", b.String(), got, want)
	}
}

func TestMarkdownWarnings(t *testing.T) {
	var b strings.Builder
	MarkdownWarnings(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no warnings wrote %q", b.String())
	}
	MarkdownWarnings(&b, []string{"a [link](x)", "# b"})
	want := "> ⚠️ " + MarkdownEscape("a [link](x)") + "\n> ⚠️ " + MarkdownEscape("# b") + "\n\n"
	if b.String() != want || strings.Contains(b.String(), "[link](x)") {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
