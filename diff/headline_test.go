package diff

import (
	"regexp"
	"strings"
	"testing"
)

// TestHeadlineTextUnjudged: a headline that is not judged shows both
// values and why, but no change and no p-value: a signed percentage in a
// report's header reads as a verdict (a golden test's header once said
// "823ms -> 664ms (-19.3%)" for code that got slower, its baseline
// measured when the machine was slower). A judged one says its change.
func TestHeadlineTextUnjudged(t *testing.T) {
	change := regexp.MustCompile(`[+-]\d+(\.\d+)?%|p=|->`)
	un := Headline{Per: "iteration", Base: 823e6, Head: 664e6, Relative: 664.0/823 - 1, P: 0.01, Reason: "not asked for"}
	got := un.text()
	if change.MatchString(got) {
		t.Errorf("unjudged headline %q shows a change", got)
	}
	for _, want := range []string{"not compared", "base 823ms", "head 664ms", "not asked for"} {
		if !strings.Contains(got, want) {
			t.Errorf("unjudged headline %q lacks %q", got, want)
		}
	}
	judged := un
	judged.Judged, judged.Verdict = true, Improved
	if got := judged.text(); !strings.Contains(got, "823ms -> 664ms (-19.3%, p=0.01): improved") {
		t.Errorf("judged headline %q does not say its change and verdict", got)
	}
}
