//go:build linux

package zktest

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// On Linux every server process gets SIGKILL when the test binary dies
// (Pdeathsig), so a test binary killed by a timeout or a signal, whose
// cleanups never run, still leaves no JVM behind.
//
// Pdeathsig fires when the OS thread that forked the child exits, not when
// the process does, and the Go runtime may retire threads. Every start is
// therefore done by one goroutine locked to its thread for the life of the
// test binary; that thread never exits, so the signal only comes when the
// whole process goes.

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

// StartCommand starts cmd so that it is killed when the test binary dies,
// even if the test's cleanups never run; use it for any helper process a
// test starts (a peer in another language, say). It sets cmd.SysProcAttr.
func StartCommand(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
			for r := range spawnCh {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawnCh <- spawnReq{cmd: cmd, done: done}
	return <-done
}
