//go:build !linux

package perfexec

import (
	"fmt"
	"os/exec"
	"runtime"
)

// Run returns an error matching ErrUnavailable: perf events exist only on
// Linux. The program does not run.
func Run(cmd *exec.Cmd, o Options) (*Result, error) {
	return nil, fmt.Errorf("perfexec: %w: perf events exist only on Linux, not %s", ErrUnavailable, runtime.GOOS)
}
