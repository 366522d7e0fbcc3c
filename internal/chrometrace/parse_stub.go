package chrometrace

import (
	"errors"
	"io"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// Parse reads one input. (Placeholder until the loader lands; delete this file.)
func Parse(r io.Reader, o pbuild.Options) (*profile.Profile, error) {
	return nil, errors.New("not implemented yet")
}
