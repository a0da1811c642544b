//go:build unix

package exec

import (
	osexec "os/exec"
	"syscall"
)

// setProcAttr puts the program in a process group of its own, so that
// stopping it stops what it started too.
func setProcAttr(cmd *osexec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
}

// killGroup sends SIGKILL to the program's process group.
func killGroup(cmd *osexec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
