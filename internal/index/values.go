package index

import "github.com/hotbudget/hotbudget/internal/pbuild"

// CheckValues holds the index's sample values to pbuild.ValueSums' rule,
// as the loaders hold what they read: no value negative, no total past
// int64. Once it passes, every sum Sum makes is a sum of some of the
// samples' values and cannot overflow.
func (x *Index) CheckValues() error {
	s := pbuild.NewValueSums(x.Types)
	stride := len(x.Types)
	for i := range x.SampleStack {
		if err := s.Add(i, x.Values[i*stride:(i+1)*stride]); err != nil {
			return err
		}
	}
	return nil
}
