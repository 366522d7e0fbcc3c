package perfassert_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/perfassert"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/suite"
)

// budgetSuite shows the assertions inside a testify suite: s.T() is the
// TestingT, and testify's own assertions check perfassert's results.
type budgetSuite struct {
	suite.Suite
	p *profile.Profile
}

func (s *budgetSuite) SetupSuite() { s.p = load(s.T(), handFolded) }

func (s *budgetSuite) TestWithinBudget() {
	s.True(perfassert.MaxSelfTime(s.T(), s.p, "main.busy", 60*time.Millisecond))
	s.True(perfassert.MaxTotalShare(s.T(), s.p, "main.run", 0.95))
}

func (s *budgetSuite) TestOverBudgetFails() {
	ft := &fakeT{}
	s.False(perfassert.MaxSelfShare(ft, s.p, "main.busy", 0.5))
	s.Require().Len(ft.errors, 1)
	s.Contains(ft.errors[0], "main.busy self time 60ms (60.00% of 100ms total, 60 samples), share 60.00%, want at most 50.00%")
}

func TestTestifySuite(t *testing.T) { suite.Run(t, new(budgetSuite)) }

// assertT is an assert.TestingT that is not a *testing.T, as testify users
// pass around.
type assertT struct{ msgs []string }

func (a *assertT) Errorf(format string, args ...any) { a.msgs = append(a.msgs, format) }

func TestTestifyAssertTestingT(t *testing.T) {
	var at assert.TestingT = &assertT{}
	if perfassert.MaxSelfTime(at, load(t, handFolded), "main.busy", time.Millisecond) {
		t.Fatal("passed")
	}
	if msgs := at.(*assertT).msgs; len(msgs) != 1 || !strings.Contains(msgs[0], "%s") {
		t.Errorf("got %q", msgs)
	}
}
