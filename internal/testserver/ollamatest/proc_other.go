//go:build !unix

package ollamatest

import (
	"os"
	"os/exec"
)

var terminateSignal = os.Interrupt

func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
