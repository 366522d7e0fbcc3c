package htmlreport

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/hotbudget/hotbudget/internal/textfmt"
)

// The flame graph formats durations as every other report does
// (textfmt.Nanos): a report that said "1.13mins" while its flame graph
// said "67.750s" for the same time read as two figures. The script's
// formatter is run with Node against the Go one.
func TestFlameDurationsAsText(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed (CI installs it): ", err)
	}
	src, err := os.ReadFile("assets/flame.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)// BEGIN fmtNanos.*// END fmtNanos`).Find(src)
	if m == nil {
		t.Fatal("flame.js has no fmtNanos between its markers")
	}
	vals := []float64{0, 1, 999, 1000, 1500, 850e3, 999.996e3, 620e6, 1.5e9, 47.75e9, 59.999e9, 60e9, 67.75e9, 90e9, 3600e9, 5400e9, -2.5e6, 0.4}
	in, _ := json.Marshal(vals)
	script := string(m) + "\nconsole.log(JSON.stringify(" + string(in) + ".map(fmtNanos)));\n"
	out, err := exec.Command(node, "-e", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for i, v := range vals {
		if want := textfmt.Nanos(v); got[i] != want {
			t.Errorf("%g ns: flame graph %q, text %q", v, got[i], want)
		}
	}
}
