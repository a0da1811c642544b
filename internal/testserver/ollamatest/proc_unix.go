//go:build unix

package ollamatest

import (
	"os/exec"
	"syscall"
)

var terminateSignal = syscall.SIGTERM

// setProcessGroup puts the server (and the runner processes it spawns) in
// a new process group so cleanup can kill all of them.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup sends SIGKILL to the process group led by cmd's process.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
