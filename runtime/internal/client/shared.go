package client

// Shared returns the value the session keeps under key, made by mk
// on first use. It holds what every handle of one resource on the session
// shares: a generated Client returns a new handle at each call, so state a
// handle kept for its next call would be lost with it. mk may run more
// than once when callers race (one value is kept), so it must not start
// anything.
func Shared[V any](s *Session, key any, mk func() V) V {
	if v, ok := s.shared.Load(key); ok {
		return v.(V)
	}
	v, _ := s.shared.LoadOrStore(key, mk())
	return v.(V)
}
