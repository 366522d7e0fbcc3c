package diff

import (
	"errors"
	"fmt"

	"github.com/google/pprof/profile"
)

// baseLabel is the label pprof puts on the negated base samples of a
// -diff_base profile; pprof hides samples with it from most views and uses
// them to subtract.
const baseLabel = "pprof::base"

// ToPprof returns a profile in pprof's -diff_base convention: head's samples
// as they are, base's with every value negated and labelled pprof::base, so
// that `go tool pprof -top` of the result shows head minus base, exactly as
// `go tool pprof -top -diff_base=BASE HEAD` does. The inputs are not
// modified. Both must have the same sample types.
func ToPprof(base, head *profile.Profile) (*profile.Profile, error) {
	if base == nil || head == nil {
		return nil, errors.New("diff: ToPprof needs a base and a head profile")
	}
	b := base.Copy()
	for _, s := range b.Sample {
		for i := range s.Value {
			s.Value[i] = -s.Value[i]
		}
		if s.Label == nil {
			s.Label = map[string][]string{}
		}
		s.Label[baseLabel] = []string{"true"}
	}
	h := head.Copy()
	// Merge insists on equal periods; the head's wins, as in pprof.
	b.Period = h.Period
	b.PeriodType = h.PeriodType
	p, err := profile.Merge([]*profile.Profile{h, b})
	if err != nil {
		return nil, fmt.Errorf("diff: base and head cannot be merged into one profile: %w", err)
	}
	return p, nil
}
