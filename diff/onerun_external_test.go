package diff_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// TestOneRunAgainstSeveralWords: five base runs against one head run
// learn their noise from the runs, so the report neither warns that the
// noise was not learned nor calls them "1 run a side" in its power advice.
func TestOneRunAgainstSeveralWords(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	shares := []float64{0.30, 0.20, 0.15, 0.12, 0.10, 0.08, 0.05}
	var base []*profile.Profile
	for range 5 {
		base = append(base, multinomial(t, r, 2000, shares))
	}
	slow := []float64{0.30, 0.20, 0.15, 0.12, 0.10, 0.08, 0.15}
	rep := compare(t, base, one(multinomial(t, r, 2000, slow)))
	for _, w := range rep.Warnings {
		if strings.Contains(w, "run-to-run noise is taken as") {
			t.Errorf("warning for one run a side: %s", w)
		}
	}
	var b bytes.Buffer
	if err := rep.Write(&b, "text"); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.Contains(text, "5 base and 1 head runs catch") || strings.Contains(text, "1 run a side") {
		t.Errorf("power advice does not name the runs of each side:\n%s", text)
	}

	// Three against five (a confirmed MatchBaseline): not "3 runs a side".
	head := []*profile.Profile{multinomial(t, r, 2000, slow), multinomial(t, r, 2000, slow), multinomial(t, r, 2000, slow)}
	b.Reset()
	if err := compare(t, base, head).Write(&b, "text"); err != nil {
		t.Fatal(err)
	}
	if text := b.String(); !strings.Contains(text, "5 base and 3 head runs catch") || strings.Contains(text, "3 runs a side catch") {
		t.Errorf("power advice does not name the runs of each side:\n%s", text)
	}
}
