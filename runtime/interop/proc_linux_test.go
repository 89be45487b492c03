//go:build linux

package interop_test

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// On Linux every peer process gets SIGKILL when the test binary dies
// (Pdeathsig), so a test binary killed before its cleanups run leaves no JVM
// or python behind. Pdeathsig fires when the OS thread that forked the child
// exits, so every start is done by one goroutine locked to a thread that
// lives as long as the test binary.

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

func startCmd(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread outlives every child
			for r := range spawnCh {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawnCh <- spawnReq{cmd: cmd, done: done}
	return <-done
}
