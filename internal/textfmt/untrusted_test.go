package textfmt_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hotbudget/hotbudget/internal/testutil"
	"github.com/hotbudget/hotbudget/internal/textfmt"
)

func TestTerm(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"main.(*Parser).next", "main.(*Parser).next"},
		{"std::vector<int>::push_back", "std::vector<int>::push_back"},
		{"pkg.F[go.shape.int]", "pkg.F[go.shape.int]"},
		{"C:\\src\\app.go", "C:\\src\\app.go"},
		{"a\nb\rc\td", `a\nb\rc\td`},
		{"\x1b[2J\x1b]52;c;eA==\x07", `\x1b[2J\x1b]52;c;eA==\x07`},
		{"nul\x00 del\x7f", `nul\x00 del\x7f`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"\u0085\u009b\u2028\u2029\u202e\u2066\ufeff", `\u0085\u009b\u2028\u2029\u202e\u2066\ufeff`},
		{"::error::x", `\x3a:error::x`},
		{"  \u00a0::warning::x", "  \u00a0\\x3a:warning::x"},
		{"\t::x", `\t\x3a:x`},
		{"a::b", "a::b"},
		{"x ##[warning]y", `x ##\u005bwarning]y`},
		{"#[x] ## [y]", "#[x] ## [y]"},
		{"日本語 ✓", "日本語 ✓"},
	} {
		if got := textfmt.Term(c.in); got != c.want {
			t.Errorf("textfmt.Term(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := textfmt.Term(textfmt.Term(c.in)); got != textfmt.Term(c.in) {
			t.Errorf("Term is not idempotent on %q: %q", c.in, got)
		}
		if c := testutil.RawControl(textfmt.Term(c.in)); c != "" {
			t.Errorf("Term leaves %s", c)
		}
	}
}

func TestShorten(t *testing.T) {
	if got := textfmt.Shorten("short", 10); got != "short" {
		t.Errorf("Shorten kept %q", got)
	}
	s := "github.com/org/repo/internal/pkg.(*Type).Method"
	got := textfmt.Shorten(s, 20)
	if want := "githu…(*Type).Method"; got != want {
		t.Errorf("Shorten = %q, want %q", got, want)
	}
	long := strings.Repeat("é", 1<<20) + "End"
	got = textfmt.Shorten(long, textfmt.MaxName)
	if n := utf8.RuneCountInString(got); n != textfmt.MaxName || !strings.HasSuffix(got, "End") || !utf8.ValidString(got) {
		t.Errorf("Shorten of 1M runes: %d runes, valid %v, %q...", n, utf8.ValidString(got), got[:20])
	}
	if got := textfmt.Name(long); utf8.RuneCountInString(got) != textfmt.MaxName {
		t.Errorf("Name: %d runes", utf8.RuneCountInString(got))
	}
}

// TestMarkdownRendered renders each hostile name through MarkdownCode (in
// a table cell), MarkdownEscape (in a quote and a table cell) and HTML (in
// a <details> summary) with cmark-gfm: the structure is that of an
// ordinary name, with no mention outside code.
func TestMarkdownRendered(t *testing.T) {
	doc := func(name string) string {
		return "### report: " + textfmt.MarkdownCode(name) + "\n\n" +
			"> ⚠️ warning about " + textfmt.MarkdownEscape(name) + "\n\n" +
			"| function | note |\n|:--|:--|\n| " + textfmt.MarkdownCode(name) + " | " + textfmt.MarkdownEscape("was "+name) + " |\n\n" +
			"<details><summary><code>" + textfmt.HTML(name) + "</code>: " + textfmt.HTML("through "+name) + "</summary>\n\n" +
			"- " + textfmt.MarkdownEscape(name) + "\n\n</details>\n"
	}
	want := strings.Join(testutil.Skeleton(testutil.RenderGFM(t, doc("main.F"))), " ")
	for _, name := range append(testutil.Hostile, "www.evil.example", "mailto:a@b.co", "x@y.example", "<https://evil.example>", "[a]: https://evil.example", "&#64;user", "1. item", "# h", "---", "=== ", "    code") {
		html := testutil.RenderGFM(t, doc(name))
		if got := strings.Join(testutil.Skeleton(html), " "); got != want {
			t.Errorf("%q changed the structure:\n got %s\nwant %s\n%s", name, got, want, html)
		}
		if m := testutil.Mention(html); m != "" {
			t.Errorf("%q: a mention outside code (%q):\n%s", name, m, html)
		}
	}
}

func TestLimitMarkdown(t *testing.T) {
	var b strings.Builder
	b.WriteString("### head\n\n<details><summary>rows</summary>\n\n| a |\n|--|\n")
	for range 5000 {
		b.WriteString("| `row` |\n")
	}
	b.WriteString("\n</details>\n")
	s := b.String()
	if got := textfmt.LimitMarkdown(s, len(s)); got != s {
		t.Error("LimitMarkdown changed a report within the limit")
	}
	got := textfmt.LimitMarkdown(s, 10000)
	if len(got) > 10000 {
		t.Errorf("%d bytes, want at most 10000", len(got))
	}
	if strings.Count(got, "<details>") != strings.Count(got, "</details>") || !strings.Contains(got, "left out") {
		t.Errorf("cut report:\n%s", got[len(got)-400:])
	}
	html := testutil.RenderGFM(t, got)
	if !strings.HasSuffix(strings.TrimSpace(html), "</p>") || !strings.Contains(html, "</details>") {
		t.Errorf("the cut report renders as:\n%s", html[len(html)-400:])
	}
}

func TestGuardKeepsJSONValid(t *testing.T) {
	var b bytes.Buffer
	g := textfmt.NewGuard(&b)
	g.Write([]byte("{\"name\": \"x ##[warning]y \u0085 \u009b\"}\n"))
	g.Flush()
	if got, want := b.String(), "{\"name\": \"x ##\\u005bwarning]y \\u0085 \\u009b\"}\n"; got != want {
		t.Errorf("guarded JSON %q, want %q", got, want)
	}
}
