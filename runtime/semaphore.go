package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// --- Semaphore protocol
//
// Curator's InterProcessSemaphoreV2, in its layout:
//
//	<dir>/locks/_c_<uuid>-lock-<seq>    an exclusive lock serialising acquirers
//	<dir>/leases/_c_<uuid>-lease-<seq>  one ephemeral node per lease
//
// An acquirer takes the internal lock (herd-free: it waits for its
// predecessor only), creates its lease node, and while there are more lease
// nodes than leases it waits on a children watch of the leases directory —
// only it, the internal lock's holder, watches there, so a release wakes
// one client. Then it releases the internal lock.

// Semaphore is a counting semaphore on a znode directory: at most a fixed
// number of leases are held at once, and a released lease wakes one waiting
// participant. It uses Curator's InterProcessSemaphoreV2 layout, so the two
// share a path, or with WithLayout(LayoutKazoo) kazoo's Semaphore layout and
// protocol. Leases are ephemeral: they do not survive their session.
//
// A Semaphore handle stands for one participant: it holds at most one lease
// at a time (Acquire while holding returns ErrAlreadyHeld). A handle that
// has never tried to acquire (a generated accessor's, made per call)
// answers Unlock and Lost for the one handle of its session that holds a
// lease, when exactly one does: c.Slots().Unlock gives back what
// c.Slots().Lock took.
type Semaphore struct {
	s      *Session
	dir    string
	err    error
	leases int
	acl    []zk.ACL // of created nodes; empty: the session's default
	name   string   // WithResourceName
	mutex  *Lock
	kazoo  bool // kazoo's layout (semaphore_kazoo.go)

	mu      sync.Mutex
	lease   *Lease
	busy    bool
	tried   bool // an acquisition was started: the handle answers for itself
	purpose string
}

// Lease is one held lease of a semaphore, held until Release or until it is
// lost: its session ended, or its lease node was deleted by someone else —
// noticed once Lost or Context has been called, see Lock.Lost. Node is the
// lease node; Lost and Context report the end of the lease, and
// context.Cause wraps ErrLockLost on loss, ErrNotHeld after Release.
type Lease struct {
	tenure
	sem *Semaphore
}

// NewSemaphore returns a handle on a semaphore of the given number of leases
// at p. It does no I/O. Every participant must use the same number.
// opts: WithNodeACL, WithLayout (LayoutKazoo: kazoo's Semaphore layout,
// whose directory records the number of leases; a handle with another
// number is refused with ErrSpecMismatch).
func NewSemaphore(s *Session, p Path, leases int, opts ...HandleOption) *Semaphore {
	cfg := handleOptions(opts)
	acl := cfg.acl
	m := &Semaphore{s: s, dir: p.String(), err: p.Err(), leases: leases, acl: acl, name: cfg.name, mutex: NewLock(s, p.Lit(semaphoreLocksDir), WithNodeACL(acl), internalLock)}
	if cfg.layout == LayoutKazoo {
		m.kazoo = true
		m.mutex = NewLock(s, At(m.dir+kazooLockSuffix), WithNodeACL(acl), WithLayout(LayoutKazoo), internalLock)
	}
	if m.err == nil && leases < 1 {
		m.err = fmt.Errorf("semaphore %s: leases must be >= 1, got %d", m.dir, leases)
	}
	return m
}

// Path returns the semaphore's directory.
func (m *Semaphore) Path() string { return m.dir }

// SetPurpose sets the purpose recorded in the owner metadata of the next
// lease.
func (m *Semaphore) SetPurpose(purpose string) {
	m.mu.Lock()
	m.purpose = purpose
	m.mu.Unlock()
}

// The children of a semaphore (Curator's layout): its internal lock's and
// its leases' directories.
const (
	semaphoreLocksDir  = "locks"
	semaphoreLeasesDir = "leases"
)

func (m *Semaphore) leasesDir() string { return joinPath(m.dir, semaphoreLeasesDir) }

// Acquire blocks until this participant holds a lease, ctx ends, or the
// session ends; on ctx's end it removes its nodes before returning ctx's
// error. The lease is held until Release, or lost (see Lease.Lost).
func (m *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	l, _, err := m.tryAcquire(ctx, true)
	return l, err
}

// TryAcquire takes a lease if one is free now, without waiting: it returns
// the lease and true, or nil and false at once when every lease is held (or
// another participant is acquiring, holding the internal lock, which it
// does while the leases are all held). It leaves no node behind when it
// returns false.
func (m *Semaphore) TryAcquire(ctx context.Context) (*Lease, bool, error) {
	return m.tryAcquire(ctx, false)
}

func (m *Semaphore) tryAcquire(ctx context.Context, wait bool) (*Lease, bool, error) {
	if m.err != nil {
		return nil, false, m.err
	}
	m.mu.Lock()
	if m.busy {
		m.mu.Unlock()
		return nil, false, fmt.Errorf("semaphore %s: %w", m.dir, ErrAlreadyHeld)
	}
	m.busy, m.tried = true, true
	purpose := m.purpose
	m.mu.Unlock()

	sp := telOf(m.s).begin(ctx, opSemAcquire, "semaphore", m.name, m.dir)
	h, err := m.acquire(ctx, purpose, wait)
	sp.acquired(h, err)

	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil || h == nil {
		m.busy = false
		return nil, false, err
	}
	m.lease = &Lease{tenure: tenure{s: m.s, h: h}, sem: m}
	holdersOf(m.s).add(semHeld{m.dir}, m)
	return m.lease, true, nil
}

// acquire runs the semaphore protocol. Without wait it returns a nil hold
// and no error when no lease is free now.
func (m *Semaphore) acquire(ctx context.Context, purpose string, wait bool) (*hold, error) {
	if m.kazoo {
		return m.acquireKazoo(ctx, purpose, wait)
	}
	if err := guardSpec(ctx, m.s, m.dir, m.acl, specRecord{Kind: "semaphore", Leases: m.leases}); err != nil {
		return nil, err
	}
	if ok, err := m.lockInternal(ctx, wait); err != nil || !ok {
		return nil, err
	}
	defer m.unlockInternal()
	dir := m.leasesDir()
	// The first watched children read goes out with the create
	// (pipeline.go).
	node, first, err := opsOf(m.s).CreateListed(ctx, m.acl, dir, curatorLeases.prefix(opsOf(m.s).Rand(), 0), ownerData(m.s, purpose), true)
	if err != nil {
		return nil, err
	}
	name := baseName(node)
	var token int64
	for {
		var r client.Result
		if first != nil {
			r, first = *first, nil
		} else if r, err = opsOf(m.s).ChildrenW(ctx, dir); err != nil {
			return nil, abandonNode(m.s, node, err)
		}
		cs := curatorLeases.sortContenders(r.Kids)
		if indexOf(cs, name) < 0 {
			return nil, fmt.Errorf("semaphore %s: lease node deleted while waiting: %w", node, ErrLockLost)
		}
		if len(cs) <= m.leases {
			token = r.Stat.Pzxid
			break
		}
		if !wait {
			return nil, abandonNode(m.s, node, nil)
		}
		select {
		case <-r.Watch:
		case <-ctx.Done():
			return nil, abandonNode(m.s, node, ctx.Err())
		case <-m.s.Done():
			return nil, m.s.Err()
		case <-m.mutex.Lost():
			// Our internal lock was lost (reaped): others may add leases
			// now, so the count above cannot be trusted any more.
			return nil, abandonNode(m.s, node, fmt.Errorf("semaphore %s: internal lock lost while waiting: %w", m.dir, ErrLockLost))
		}
	}
	h, err := startHold(ctx, m.s, node, token, false)
	if err != nil {
		return nil, abandonNode(m.s, node, err)
	}
	return h, nil
}

// LockHolders lists the contenders of the semaphore's internal lock, the
// holder first (see Lock.Holders), wherever its layout keeps it: a
// participant holds that lock while it takes a lease, so one that holds it
// long (a paused process) keeps every other waiting. It is for tools
// (zkgen inspect names the blocker; zkgen reap breaks it).
func (m *Semaphore) LockHolders(ctx context.Context) ([]Holder, error) {
	if m.err != nil {
		return nil, m.err
	}
	return m.mutex.Holders(ctx)
}

// Holders returns the lease holders, then the participants waiting for a
// lease, in order, with their owner metadata.
func (m *Semaphore) Holders(ctx context.Context) ([]Holder, error) {
	if m.err != nil {
		return nil, m.err
	}
	var leases []Holder
	var err error
	if m.kazoo {
		leases, err = m.holdersKazoo(ctx)
	} else {
		leases, err = listHolders(ctx, m.s, m.leasesDir(), curatorLeases)
	}
	if err != nil {
		return nil, err
	}
	for i := range leases {
		leases[i].Holds = i < m.leases
	}
	waiters, err := m.mutex.Holders(ctx)
	if err != nil {
		return nil, err
	}
	for i := range waiters {
		waiters[i].Holds = false
	}
	// The internal lock's holder is represented by its lease node once it
	// has one; before that, it is the first waiter.
	if len(waiters) > 0 && len(leases) > m.leases {
		waiters = waiters[1:]
	}
	return append(leases, waiters...), nil
}

// Reap deletes lease and waiter nodes created more than olderThan ago (by
// the server's clock) and returns what it removed; a reaped holder's Lost
// fires. See Lock.Reap.
func (m *Semaphore) Reap(ctx context.Context, olderThan time.Duration) ([]Holder, error) {
	if m.err != nil {
		return nil, m.err
	}
	var removed []Holder
	var err error
	if m.kazoo {
		removed, err = m.reapKazoo(ctx, olderThan)
	} else {
		removed, err = reapDir(ctx, m.s, m.leasesDir(), curatorLeases, olderThan)
	}
	if err != nil {
		return removed, err
	}
	more, err := m.mutex.Reap(ctx, olderThan)
	return append(removed, more...), err
}

// Release gives the lease back, waking the one participant waiting for a
// lease. It returns ErrLockLost if the lease had been lost, ErrNotHeld if it
// was released already.
func (le *Lease) Release(ctx context.Context) (err error) {
	if le.zero() {
		return errZeroValue
	}
	m := le.sem
	defer telOf(m.s).begin(ctx, opSemRelease, "semaphore", m.name, m.dir).end(&err)
	m.mu.Lock()
	if m.lease != le {
		m.mu.Unlock()
		return fmt.Errorf("semaphore %s: %w", m.dir, ErrNotHeld)
	}
	m.lease = nil
	m.busy = false
	m.mu.Unlock()
	holdersOf(m.s).remove(semHeld{m.dir}, m)
	return releaseHold(ctx, m.s, le.h)
}

// Token returns the leases directory's pzxid when the lease was granted
// (see [Lock.Token], which also says what a token guarantees).
func (le *Lease) Token() int64 {
	if le.zero() {
		return 0
	}
	return le.h.token
}

// Guarded runs ops as one ZooKeeper multi that also checks that this
// lease's node still exists: the writes happen only while the lease is
// held. Errors as for Lock.Guarded (ErrLockLost on loss, ErrNotHeld after
// Release, ErrOutcomeUnknown when the reply was lost).
func (le *Lease) Guarded(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	return le.guardedOwn(ctx, "semaphore lease", ops)
}

// Curator's semaphore leases: <path>/leases/_c_<uuid>-lease-<seq>.
var curatorLeases = &family{markers: []string{"lease-"}, blockedBy: [][]bool{{false}}}

// Lock takes a lease like Acquire and keeps it in the handle, for use as a
// member of a multi-lock (LockAll); Unlock gives it back and Lost reports
// its end.
func (m *Semaphore) Lock(ctx context.Context) error {
	_, err := m.Acquire(ctx)
	return err
}

// Unlock releases the lease this handle holds (see Lease.Release). It
// returns ErrNotHeld when it holds none. On a handle that has never tried
// to acquire, it releases the lease of the one handle of its session that
// holds one; when several do, it returns ErrNotHeld saying so and releases
// nothing.
func (m *Semaphore) Unlock(ctx context.Context) error {
	return actAs(m, m.fresh(), m.s, semHeld{m.dir}, "semaphore", m.dir, func(a *Semaphore) error {
		le := a.held()
		if le == nil {
			return fmt.Errorf("semaphore %s: %w", m.dir, ErrNotHeld)
		}
		return le.Release(ctx)
	})
}

// Lost returns the Lost channel of the lease this handle holds (on a
// handle that has never tried to acquire: of the one handle of its session
// that holds a lease), or a closed channel when it holds none.
func (m *Semaphore) Lost() <-chan struct{} {
	a, _ := answering(m, m.fresh(), m.s, semHeld{m.dir})
	if le := a.held(); le != nil {
		return le.Lost()
	}
	return closedCh
}

// held returns the lease the handle holds, or nil.
func (m *Semaphore) held() *Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease
}

// semHeld is a semaphore as the session's holders know it (holders.go).
type semHeld struct{ dir string }

// fresh reports whether m has never tried to acquire: it then answers for
// the handle of its session that holds a lease (see holders.go).
func (m *Semaphore) fresh() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.tried && m.err == nil
}

// Do acquires a lease, runs fn with a context that also ends if the lease
// is lost, and releases the lease. Errors are as for Lock.Do.
func (m *Semaphore) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	le, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	fctx, cancel := tenureCtx(ctx, le.Context())
	ferr := fn(fctx)
	cancel()
	rctx, rcancel := releaseCtx(ctx)
	defer rcancel()
	return client.JoinErrors(ferr, le.Release(rctx))
}

func (m *Semaphore) telResource() (*telemetry, string) { return telOf(m.s), orPath(m.name, m.dir) }
