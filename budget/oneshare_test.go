package budget

import (
	"regexp"
	"testing"
)

// check gave two shares for one function of one profile: "share 13.11%"
// for max_self_share and "self share 11.62% -> 14.60%" for max_regression,
// whose head was the base share times the normalised change. The head
// share of a max_regression rule is the profile's share, as
// max_self_share reports it, for one profile and for several.
func TestOneShareForOneFunction(t *testing.T) {
	b := mustParse(t, "b.yaml", `version: 1
rules:
  - function: main.renderReport
    max_self_share: 99%
  - function: main.renderReport
    max_regression: 1000%
`)
	for _, c := range []struct{ base, head string }{
		{"regress/base-1.pb.gz", "regress/head-1.pb.gz"},
		{"regress/base-*.pb.gz", "regress/head-*.pb.gz"},
	} {
		res, err := Check(b, loadGlob(t, c.head), loadGlob(t, c.base))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Checks) != 2 {
			t.Fatalf("%d checks", len(res.Checks))
		}
		share := regexp.MustCompile(`share (\d+\.\d\d%)`).FindStringSubmatch(res.Checks[0].Message)
		reg := regexp.MustCompile(`self share (\d+\.\d\d%) -> (\d+\.\d\d%)`).FindStringSubmatch(res.Checks[1].Message)
		if share == nil || reg == nil {
			t.Fatalf("%s: messages %q and %q", c.head, res.Checks[0].Message, res.Checks[1].Message)
		}
		if share[1] != reg[2] {
			t.Errorf("%s: max_self_share says %s, max_regression's head %s:\n%s\n%s", c.head, share[1], reg[2], res.Checks[0].Message, res.Checks[1].Message)
		}
	}
}
