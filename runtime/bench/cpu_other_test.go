//go:build !linux

package bench

import "time"

// cpuTimes is only read on Linux.
func cpuTimes(pid int) (self, server time.Duration, ok bool) { return 0, 0, false }
