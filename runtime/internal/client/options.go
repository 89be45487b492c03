package client

import (
	"log/slog"
	"time"
)

// Option configures Connect.
type Option func(*Session)

// WithSessionTimeout sets the session timeout asked of the server (which
// clamps it to its own min/max). Default 10s. It also bounds how long the
// client tolerates being disconnected: once 35% of the granted timeout has
// passed since it last heard from the server, the session is treated as
// expired locally, before the server can expire it and grant another client
// what this one held (see liveness.go for why 35%: a client on a follower
// may be known to the ensemble's leader only up to a ping interval and half
// a tick before its last reply). Choose the timeout for the longest
// disconnection to ride out: about three times it.
func WithSessionTimeout(d time.Duration) Option {
	return func(s *Session) { s.timeout = d }
}

// WithReadOnly makes the session a looker's, as zkgen inspect and zkgen
// serve open: the reads of the recipes' handles skip the housekeeping
// writes they otherwise make (a dead letter's reason left behind by a
// zkgen that kept none is left for a writer to remove), and creates,
// deletes and multis fail with ErrReadOnly before anything is sent.
func WithReadOnly() Option {
	return func(s *Session) { s.readOnly = true }
}

// WithRetry sets the retry policy for recoverable errors of idempotent
// operations. Default DefaultRetry.
func WithRetry(p RetryPolicy) Option {
	return func(s *Session) { s.policy = p }
}

// WithLogger sets the logger. Default slog.Default(). Session state changes
// are logged at info/warn, the client library's own chatter at debug.
func WithLogger(l *slog.Logger) Option {
	return func(s *Session) { s.log = l }
}

// WithAuth adds credentials to the session once it is established, as
// ZooKeeper's addAuth does (scheme "digest", auth "user:password" for digest
// ACLs). go-zookeeper sends them again after every reconnection. Connect
// fails if the server refuses them. Default: no credentials. May be given
// more than once.
func WithAuth(scheme string, auth []byte) Option {
	return func(s *Session) {
		s.auth = append(s.auth, authInfo{scheme: scheme, auth: append([]byte(nil), auth...)})
	}
}

type authInfo struct {
	scheme string
	auth   []byte
}
