//go:build !linux

package interop_test

import "os/exec"

func startCmd(cmd *exec.Cmd) error { return cmd.Start() }
