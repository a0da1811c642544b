//go:build !unix

package exec

import osexec "os/exec"

func setProcAttr(*osexec.Cmd) {}

// killGroup kills the program (only it: no process groups here).
func killGroup(cmd *osexec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
