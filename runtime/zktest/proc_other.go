//go:build !linux

package zktest

import "os/exec"

// startCmd starts cmd. Outside Linux there is no parent-death signal, so a
// test binary that dies without running its cleanups can leave a server
// behind.
func startCmd(cmd *exec.Cmd) error {
	return cmd.Start()
}
