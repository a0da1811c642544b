//go:build unix && !linux

package exec

import "syscall"

// setParentDeathSignal does nothing here: only Linux has one. The program
// exits when its stdin ends, as the protocol asks.
func setParentDeathSignal(*syscall.SysProcAttr) {}
