package textfmt

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0"},
		{5, "5ns"},
		{1500, "1.50us"},
		{850 * time.Microsecond, "850us"},
		{299040 * time.Microsecond, "299.04ms"},
		{620 * time.Millisecond, "620ms"},
		{4273330 * time.Microsecond, "4.27s"},
		{90 * time.Second, "1.50mins"},
		{2 * time.Hour, "2hrs"},
		{-1500 * time.Microsecond, "-1.50ms"},
	} {
		if got := Duration(c.d); got != c.want {
			t.Errorf("Duration(%v) = %q, want %q", int64(c.d), got, c.want)
		}
	}
	if got := Nanos(2.5e6); got != "2.50ms" {
		t.Errorf("Nanos(2.5e6) = %q", got)
	}
}

func TestPercent(t *testing.T) {
	if got := Percent(0.93041); got != "93.04%" {
		t.Errorf("Percent = %q", got)
	}
}

func TestMarkdown(t *testing.T) {
	if got := MarkdownEscape("a|b <c> *d* _e_ `f`\ng"); got != `a\|b &lt;c&gt; \*d\* \_e\_ \`+"`"+`f\`+"`"+`\\ng` {
		t.Errorf("MarkdownEscape = %q", got)
	}
	if got := MarkdownCode("x`y|z"); got != "``x`y\\|z``" {
		t.Errorf("MarkdownCode = %q", got)
	}
	if got := MarkdownCode("`edge"); got != "`` `edge ``" {
		t.Errorf("MarkdownCode = %q", got)
	}
}
