//go:build unix

package atomicfile

import (
	"errors"
	"syscall"
)

// alive reports whether a process with this id exists (it may belong to
// another user).
func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
