package runtime

import (
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/go-zookeeper/zk"
)

// Sentinel errors, tested with errors.Is. Errors returned by this package wrap
// them with the znode path they concern.
var (
	// ErrSessionExpired means ZooKeeper expired the session (or the client
	// was cut off for over a third of the session timeout and gave it up before the
	// server could expire it, see WithSessionTimeout). It is fatal: every
	// ephemeral node of the session is gone, every handle built on the session
	// reports lost, and the session is not reopened behind your back.
	ErrSessionExpired = errors.New("session: expired")
	// ErrClosed means the session was closed with Session.Close.
	ErrClosed = errors.New("session: closed")
	// ErrReadOnly is the error of a create, delete or multi on a session
	// opened WithReadOnly.
	ErrReadOnly = errors.New("session: read-only")
	// ErrLockLost means a lock this handle held is no longer held: its node
	// was deleted by someone else or its session ended.
	ErrLockLost = errors.New("lock: lost")
	// ErrNotHeld means Unlock was called on a handle that does not hold the lock.
	ErrNotHeld = errors.New("lock: not held")
	// errZeroValue is what a method of a zero value returns (a Lease,
	// Leadership, Membership, Assignment, Delivery or TTLLease not handed
	// out by a handle, as a unit test might build one): never a panic.
	errZeroValue = fmt.Errorf("runtime: a zero value, not handed out by a handle: %w", ErrNotHeld)
	// ErrAlreadyHeld means Lock was called on a handle that already holds the
	// lock or is acquiring it. Handles are not reentrant.
	ErrAlreadyHeld = errors.New("lock: already held or being acquired by this handle")
	// ErrNotRevocable means RequestRevoke was called on a lock declared
	// without revocation.
	ErrNotRevocable = errors.New("lock: not revocable")
	// ErrVersionConflict means a compare-and-set found a different version.
	ErrVersionConflict = errors.New("config: version conflict")
	// ErrNoValue means a config node does not exist (never set, or
	// deleted).
	ErrNoValue = errors.New("config: no value")
	// ErrNoLeader means an election has no acknowledged leader right now.
	ErrNoLeader = errors.New("election: no leader")
	// ErrLeadershipLost means a leadership ended without Resign: the
	// candidate node was deleted by someone else or the session ended.
	ErrLeadershipLost = errors.New("election: leadership lost")
	// ErrNotLeader means Resign was called on a leadership already resigned.
	ErrNotLeader = errors.New("election: not leader")
	// ErrMembershipLost means a group membership ended without Leave: the
	// member node was deleted by someone else or the session ended.
	ErrMembershipLost = errors.New("group: membership lost")
	// ErrPartitionLost means a partitioner member does not own the
	// partition (any more): it was released on a rebalance, Leave or
	// Close, or lost with the membership (then ErrMembershipLost is
	// wrapped too). A Guarded write for it was not applied.
	ErrPartitionLost = errors.New("partitioner: partition not owned")
	// ErrNotMember means Leave was called on a membership already left.
	ErrNotMember = errors.New("group: not a member")
	// ErrTxExists means Propose found the transaction already proposed.
	ErrTxExists = errors.New("twopc: transaction already proposed")
	// ErrNoTx means the transaction node is missing where it must exist.
	ErrNoTx = errors.New("twopc: no such transaction")
	// ErrUnknownParticipant means a participant is not one of the
	// transaction's declared participants.
	ErrUnknownParticipant = errors.New("twopc: unknown participant")
	// ErrAlreadyJoined means Join found the participant already joined (by
	// this or another session) or already voted.
	ErrAlreadyJoined = errors.New("twopc: participant already joined or voted")
	// ErrAlreadyVoted means Vote found a different vote already cast for the
	// participant. Votes never change.
	ErrAlreadyVoted = errors.New("twopc: participant already voted")
	// ErrPresenceLost means a participant's presence node vanished (its
	// session ended) before it voted: it cannot vote any more, and the
	// transaction aborts.
	ErrPresenceLost = errors.New("twopc: presence lost before voting")
	// ErrInvalidPath means a path parameter was rejected (empty, "." or "..",
	// containing "/", NUL or control characters, not UTF-8, or too long).
	// Nothing was sent to ZooKeeper.
	ErrInvalidPath = errors.New("path: invalid parameter")
	// ErrDecode means a node's data could not be decoded as the payload
	// type. The node is left in place.
	ErrDecode = errors.New("payload: cannot decode")
	// ErrSpecMismatch means a handle's spec parameters (a semaphore's
	// leases, a double barrier's size, a queue's delivery or priority
	// levels, a lock's layout, the kind) do not fit those recorded in the
	// resource's directory by the process that created it: two versions of
	// the spec would run different protocols on one path. The handle took no
	// part; see `zkgen breaking`.
	ErrSpecMismatch = errors.New("spec: parameters differ from those recorded by another process")
	// ErrPutUncertain means the session ended while a queue put was in
	// flight, so whether its items were put cannot be known any more (the
	// marker that would tell was ephemeral). Nothing else is uncertain: a
	// put that returns nil happened exactly once, and one that returns
	// another error did not happen.
	ErrPutUncertain = errors.New("queue: put outcome unknown (session ended)")
	// ErrTakeUncertain means the session ended while an at-most-once take
	// was in flight: the items it was removing may have been removed without
	// being delivered (at-most-once allows that loss; it never duplicates).
	ErrTakeUncertain = errors.New("queue: take outcome unknown (session ended)")
	// ErrClaimLost means an at-least-once delivery's claim is gone (its
	// session ended): Ack or Release changed nothing and the item will be
	// delivered again.
	ErrClaimLost = errors.New("queue: claim lost")
	// ErrPriorityRange means a priority outside the queue's priorities was
	// given. Nothing was sent to ZooKeeper.
	ErrPriorityRange = errors.New("queue: priority out of range")
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
		isConnError(err):
		return Recoverable
	default:
		return Fatal
	}
}

// isConnError reports an error of the connection itself ("write: broken
// pipe", "connection reset by peer", or io.ErrClosedPipe from an in-memory
// connection such as net.Pipe, which a WithDialer transport may be): the
// client is reconnecting, as after a connection loss. go-zookeeper hands
// such an error to a request whose write failed; the session's connection
// reports a failed write as done instead (liveConn.Write), so requests see
// ErrConnectionClosed, but the errors stay recoverable wherever they
// surface.
func isConnError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.ErrClosedPipe)
}

// IsRecoverable reports whether err is a recoverable ZooKeeper error.
func IsRecoverable(err error) bool { return Classify(err) == Recoverable }

// opError wraps err with the operation and path, translating go-zookeeper's
// session errors into this package's sentinels.
func opError(op, path string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, zk.ErrSessionExpired) && !errors.Is(err, ErrSessionExpired) {
		err = fmt.Errorf("%w (%v)", ErrSessionExpired, err)
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}
