package runtime

import (
	"errors"
	"fmt"
)

// Sentinel errors of the recipes in general, tested with errors.Is. Each
// recipe family declares its own beside its code (lock.go, queue.go,
// election.go, ...); the session's and the client layer's
// ([ErrSessionExpired], [ErrClosed], [ErrOutcomeUnknown], ...) are
// re-exported in session.go.
var (
	// errZeroValue is what a method of a zero value returns (a Lease,
	// Leadership, Membership, Assignment, Delivery or TTLLease not handed
	// out by a handle, as a unit test might build one): never a panic.
	errZeroValue = fmt.Errorf("runtime: a zero value, not handed out by a handle: %w", ErrNotHeld)
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
	// ErrNotHeld means Unlock was called on a handle that does not hold the lock.
	ErrNotHeld = errors.New("lock: not held")
	// ErrAlreadyHeld means Lock was called on a handle that already holds the
	// lock or is acquiring it. Handles are not reentrant.
	ErrAlreadyHeld = errors.New("lock: already held or being acquired by this handle")
)
