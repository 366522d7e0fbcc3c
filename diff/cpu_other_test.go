//go:build !unix

package diff_test

import "testing"

// cpuTimer reports nothing where getrusage is not there.
func cpuTimer(*testing.B) func() { return func() {} }
