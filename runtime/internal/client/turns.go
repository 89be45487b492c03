package client

import (
	"hash/fnv"
	"runtime"
	"strconv"
)

// Turns on a stepped simulated server (runtime/zktest/sim, WithSteps). The
// server orders its own steps, but two goroutines of one process that one
// step wakes (a registration's keeper and a cache's reader woken by one
// reply; a caller and the session's handling of an expiry) would send
// their next requests in the order Go's scheduler runs them, and a replay
// of one seed could take another path. So before a request, a goroutine
// asks the connection for its turn: the simulator gives it once every
// goroutine of the run is blocked, the waiting ones in the order of their
// keys, not of their arrival. A goroutine's key is where it stands (its
// call stack's functions and lines), which is the same on every run of
// one binary, with what the request is about (its path, where the caller
// says). Two goroutines that stand at the same place with the same path
// still go in the order they came. On a real connection there is no turn
// to wait for.

// turnTaker is the connection of a stepped simulated server.
type turnTaker interface {
	// SendTurn blocks until the goroutine whose place is key may send
	// its next request; false: it was let go without a step, the
	// connection (or the server) being closed by then.
	SendTurn(key string) bool
}

// awaitTurn waits for the calling goroutine's turn to send a request
// about what, on a stepped simulated server; at once otherwise.
//
// The turn is asked on the connection the session dialled last, and a
// lost connection is dialled again by go-zookeeper's loop in the same
// instant as it wakes the callers whose requests it failed: which of them
// ask on the old connection and which on the new one would follow Go's
// scheduler. So a turn let go without a step because its connection had
// closed is asked again on the connection dialled since, if there is one
// by then: the simulator lets such a turn go only once every goroutine is
// blocked, when go-zookeeper's dial of that instant is over.
func awaitTurn(s *Session, what string) {
	var key string
	for {
		lc := s.live.Load()
		if lc == nil {
			return
		}
		t, ok := lc.Conn.(turnTaker)
		if !ok {
			return
		}
		if key == "" {
			key = callerPlace() + " " + what
		}
		if t.SendTurn(key) || s.live.Load() == lc {
			return
		}
	}
}

// callerPlace names where the calling goroutine stands: a hash of its
// stack's functions and lines, skipping the frames of this file.
func callerPlace() string {
	var pcs [48]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	h := fnv.New64a()
	for {
		f, more := frames.Next()
		h.Write([]byte(f.Function))
		h.Write(strconv.AppendInt(nil, int64(f.Line), 10))
		if !more {
			break
		}
	}
	return strconv.FormatUint(h.Sum64(), 16)
}
