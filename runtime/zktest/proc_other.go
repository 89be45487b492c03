//go:build !linux

package zktest

import "os/exec"

// StartCommand starts cmd. Outside Linux there is no parent-death signal, so
// a test binary that dies without running its cleanups can leave the process
// behind.
func StartCommand(cmd *exec.Cmd) error {
	return cmd.Start()
}
