//go:build unix

package zktest_test

import (
	"errors"
	"syscall"
	"testing"
)

// assertGone fails the test unless no process has the given pid.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("pid %d still exists after Stop (kill -0: %v)", pid, err)
	}
}
