//go:build !unix

package zktest_test

import "testing"

// assertGone cannot check for a process here; Stop has already waited for
// the exit.
func assertGone(t *testing.T, pid int) {}
