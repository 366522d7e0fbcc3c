//go:build !unix

package gate

import (
	"os/exec"
	"time"
)

// stopGroupOnCancel: without process groups, cmd alone is killed when its
// context is cancelled (exec.CommandContext's default).
func stopGroupOnCancel(cmd *exec.Cmd) {
	cmd.WaitDelay = 10 * time.Second
}
