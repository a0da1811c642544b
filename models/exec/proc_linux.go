package exec

import "syscall"

// setParentDeathSignal asks Linux to kill the program if stress dies
// first. Note: a well-behaved program also exits when its stdin ends.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
