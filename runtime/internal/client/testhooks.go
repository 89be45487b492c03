package client

import "time"

// Hooks for the runtime's tests (its export_test.go): what they observe or
// steer of a session's internals. Not for other uses.

// PipeStats returns how many pipelined listings (CreateListed) of s were
// used and how many were dropped for a read of their own.
func PipeStats(s *Session) (hits, fallbacks int64) {
	return s.pipe.hits.Load(), s.pipe.fallbacks.Load()
}

// ListBeforeCreate makes the pipelined creates of s wait, while on, until
// their listing is answered before they send the create: the listing never
// holds the new node, and every acquisition takes the fallback.
func ListBeforeCreate(s *Session, on bool) { s.pipe.listFirst.Store(on) }

// AnsweredAgo returns how long ago the latest request the server answered
// was sent (the session clock consulted by Held, see liveness.go).
func AnsweredAgo(s *Session) time.Duration {
	return time.Duration(monoNow() - s.answeredAt.Load())
}
