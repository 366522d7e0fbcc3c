//go:build unix

package gate

import (
	"os/exec"
	"syscall"
	"time"
)

// stopGroupOnCancel runs cmd in a process group of its own and makes the
// cancellation of its context stop the whole group, not only cmd: the go
// command's compilers and linkers, a test binary's children. The group gets
// SIGINT, as from Ctrl-C in a terminal (the go command then stops its
// compilers and removes its work directory); cmd is killed if it has not
// exited 10 seconds later.
func stopGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.WaitDelay = 10 * time.Second
}
