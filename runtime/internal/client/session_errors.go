package client

import (
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/go-zookeeper/zk"
)

// Sentinel errors, tested with errors.Is. Errors returned by this package wrap
// them with the znode path they concern. These are the session's and the
// client's; each recipe family declares its own beside its code, in
// package runtime.
var (
	// ErrSessionExpired means ZooKeeper expired the session (or the client
	// was cut off past the give-up point of WithSessionTimeout and gave it
	// up before the server could expire it). It is fatal: every
	// ephemeral node of the session is gone, every handle built on the session
	// reports lost, and the session is not reopened behind your back.
	ErrSessionExpired = errors.New("session: expired")
	// ErrClosed means the session was closed with Session.Close.
	ErrClosed = errors.New("session: closed")
	// ErrReadOnly is the error of a create, delete or multi on a session
	// opened WithReadOnly.
	ErrReadOnly = errors.New("session: read-only")
	// ErrRetriesExhausted means a recoverable error (connection loss) kept
	// recurring until the retry policy gave up. It wraps the last error.
	ErrRetriesExhausted = errors.New("zookeeper: retries exhausted")
	// ErrOutcomeUnknown means a write that is not idempotent (a config's
	// compare-and-set or create, a counter's Add) lost its reply
	// to a connection loss and what the runtime read afterwards cannot tell
	// whether it took effect. It took effect at most once; read and decide.
	// It always wraps the connection error, so IsRecoverable holds.
	ErrOutcomeUnknown = errors.New("zookeeper: outcome unknown")
)

// Class is the error class of the HBase ZooKeeper wrapper write-up.
type Class int

// The error classes.
const (
	// Normal errors are expected results of an operation (no node, node
	// exists, not empty, bad version) that the recipe handles itself.
	Normal Class = iota
	// Recoverable errors (connection loss, server unavailable, session moved)
	// leave the session alive; idempotent operations are retried with
	// exponential backoff.
	Recoverable
	// Fatal errors (session expired, closed, auth failed, no permission,
	// invalid input) are never retried or hidden.
	Fatal
)

// String returns the name of the class.
func (c Class) String() string {
	switch c {
	case Normal:
		return "normal"
	case Recoverable:
		return "recoverable"
	default:
		return "fatal"
	}
}

// Classify reports the class of err. A nil error is Normal.
func Classify(err error) Class {
	switch {
	case err == nil,
		errors.Is(err, zk.ErrNoNode),
		errors.Is(err, zk.ErrNodeExists),
		errors.Is(err, zk.ErrNotEmpty),
		errors.Is(err, zk.ErrBadVersion),
		errors.Is(err, zk.ErrNoChildrenForEphemerals):
		return Normal
	case errors.Is(err, ErrTLSHandshake):
		return Fatal // it wraps a net.Error, but retrying does not help
	case errors.Is(err, zk.ErrConnectionClosed),
		errors.Is(err, zk.ErrNoServer),
		errors.Is(err, zk.ErrSessionMoved),
		IsConnError(err):
		return Recoverable
	default:
		return Fatal
	}
}

// IsConnError reports an error of the connection itself ("write: broken
// pipe", "connection reset by peer", or io.ErrClosedPipe from an in-memory
// connection such as net.Pipe, which a WithDialer transport may be): the
// client is reconnecting, as after a connection loss. go-zookeeper hands
// such an error to a request whose write failed; the session's connection
// reports a failed write as done instead (liveConn.Write), so requests see
// ErrConnectionClosed, but the errors stay recoverable wherever they
// surface.
func IsConnError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.ErrClosedPipe)
}

// IsRecoverable reports whether err is a recoverable ZooKeeper error.
func IsRecoverable(err error) bool { return Classify(err) == Recoverable }

// OpError wraps err with the operation and path, translating go-zookeeper's
// session errors into this package's sentinels.
func OpError(op, path string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, zk.ErrSessionExpired) && !errors.Is(err, ErrSessionExpired) {
		err = fmt.Errorf("%w (%v)", ErrSessionExpired, err)
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}
