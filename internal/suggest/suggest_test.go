package suggest

import (
	"reflect"
	"strings"
	"testing"
)

func names(ns ...string) []Candidate {
	out := make([]Candidate, len(ns))
	for i, n := range ns {
		out[i] = Candidate{Name: n, Weight: int64(len(ns) - i)}
	}
	return out
}

func TestClosest(t *testing.T) {
	all := names("main.parseRecords", "main.renderReport", "runtime.main", "main.main")
	for _, tc := range []struct {
		sel    string
		regexp bool
		want   []string
	}{
		{"main.parseRecord", false, []string{"main.parseRecords"}}, // contained
		{"parseRecords", false, []string{"main.parseRecords"}},     // no package
		{"example.com/m/main.parseRecords", false, []string{"main.parseRecords"}},
		{"MAIN.PARSERECORDS", false, []string{"main.parseRecords"}},
		{"pkg.parseRecords", false, []string{"main.parseRecords"}},  // edit distance 4 of 16
		{"main.renderReprot", false, []string{"main.renderReport"}}, // transposed letters
		{`^main\.render$`, true, []string{"main.renderReport"}},     // metacharacters dropped
		{"zzzzzzzzzzzzzzzzzzzzzz", false, nil},
		{"", false, nil},
	} {
		if got := Closest(tc.sel, tc.regexp, all, 1); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Closest(%q) = %q, want %q", tc.sel, got, tc.want)
		}
	}
	// Equally close names: the heaviest first, then by name; a name given
	// twice counts once.
	got := Closest("main.", false, []Candidate{{"main.b", 1}, {"main.a", 1}, {"main.c", 5}, {"main.c", 9}}, 5)
	if want := []string{"main.c", "main.a", "main.b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order: %q, want %q", got, want)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2},
		{strings.Repeat("a", 500), strings.Repeat("b", 500), 128}, // bounded
	} {
		var rows [2][]int
		if got := editDistance(tc.a, tc.b, &rows); got != tc.want {
			t.Errorf("editDistance(%.10q, %.10q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestShortName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"example.com/m/pkg.(*T).Run", "pkg.(*T).Run"},
		{"main.main", "main.main"},
		{"github.com/Masterminds/semver/v3.Version.String", "semver/v3.Version.String"},
		{"example.com/v2.F", "example.com/v2.F"},
		{"example.com/m/version.F", "version.F"},
		{"example.com/m/v2x.F", "v2x.F"},
		{"example.com/m/pkg.Map[go.shape.*example.com/x/y.T]", "pkg.Map[go.shape.*example.com/x/y.T]"},
		{"example.com/m/v10.(*T).M[example.com/a/v2.T]", "m/v10.(*T).M[example.com/a/v2.T]"},
	} {
		if got := ShortName(tc.in); got != tc.want {
			t.Errorf("ShortName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
