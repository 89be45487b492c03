package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.opentelemetry.io/otel/attribute"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Sentinel errors of the locks, tested with errors.Is.
var (
	// ErrLockLost means a lock this handle held is no longer held: its node
	// was deleted by someone else or its session ended.
	ErrLockLost = client.EndError("lock: lost")
	// ErrNotRevocable means RequestRevoke was called on a lock declared
	// without revocation.
	ErrNotRevocable = errors.New("lock: not revocable")
)

// --- Lock protocol
//
// The ZooKeeper guide's recipe, for exclusive and read/write locks alike
// (contend): each contender creates an ephemeral sequential node,
// GUID-protected; a contender holds the lock when no node before its own
// blocks it (family.blocker: every node blocks a writer or an exclusive
// contender, write nodes block a reader); otherwise it watches only the
// nearest node that blocks it, so a release wakes exactly the waiters it
// unblocks (one, for an exclusive lock). A blocker found gone when its
// watch is set left between the children read and now: the contender reads
// the children again rather than wait for an event that never comes. The
// directory's pzxid in the children read that grants the lock is the
// fencing token (see Token).

// Lock is an exclusive lock on a znode directory — or one side (read or
// write) of a read/write lock. A release wakes exactly the waiters it
// unblocks (one, for an exclusive lock: no herd effect); a held lock is a
// tenure, lost when its session ends or its node is deleted (see Lost),
// with a fencing token that grows across holders (Token).
//
// Node names follow Curator by default (_c_<uuid>-lock-<seq>, and
// _c_<uuid>-__READ__<seq> / _c_<uuid>-__WRIT__<seq> for read/write locks), so
// this lock and Curator's InterProcessMutex / InterProcessReadWriteLock on the
// same path exclude each other; WithLayout(LayoutKazoo) names them as kazoo
// does. Children of the directory that are not lock nodes are ignored.
//
// A Lock stands for one contender. It is not reentrant: Lock on a handle
// that holds or is acquiring returns ErrAlreadyHeld. After Unlock it can be
// locked again. Two handles, even on one session, are two contenders. A
// handle that has never tried to lock (a generated accessor's, made per
// call) answers Unlock, Token, Held, Lost, Context, Guarded and Revoked
// for the handle of its session that holds the lock (the same side, for a
// read/write lock), when exactly one does: c.OrderLock(7).Unlock releases
// what c.OrderLock(7).Lock took. Methods are safe for concurrent use.
type Lock struct {
	s    *Session
	dir  string
	err  error // the path was invalid
	fam  *family
	kind int // kind of our nodes in fam
	cfg  lockConfig

	mu      sync.Mutex
	busy    bool   // acquiring or holding
	tried   bool   // an acquisition was started: the handle answers for itself
	hold    *hold  // non-nil while held
	pending string // while acquiring: the name prefix of this handle's node
	purpose string
}

// LockOption configures a lock handle: WithLayout, WithRevocation,
// WithNodeACL.
type LockOption interface{ applyLock(*lockConfig) }

type lockOptionFunc func(*lockConfig)

func (f lockOptionFunc) applyLock(c *lockConfig) { f(c) }

type lockConfig struct {
	handleConfig
	revocable  bool
	forceAfter time.Duration
	internal   bool // a semaphore's own lock: no telemetry
}

func (o LayoutOption) applyLock(c *lockConfig) { o.applyHandle(&c.handleConfig) }

// WithRevocation makes the lock revocable: another contender may call
// RequestRevoke, and the holder sees Revoked close and decides when to
// unlock. With forceAfter > 0, a requester whose request has not been
// honoured after forceAfter deletes the holder's node itself, and the
// holder's Lost fires when it hears of it — a holder cut off from the
// server hears at the latest when its session clock runs out, and the next
// holder may hold before that: fence what matters with Token. Default: not
// revocable.
func WithRevocation(forceAfter time.Duration) LockOption {
	return lockOptionFunc(func(c *lockConfig) { c.revocable, c.forceAfter = true, forceAfter })
}

var (
	// closedCh is returned by Lost when nothing is held.
	closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
	// neverCh is returned by Revoked when nothing can be revoked.
	neverCh = make(chan struct{})
	// notHeldCtx is returned by Context when nothing is held.
	notHeldCtx = func() context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(ErrNotHeld)
		return ctx
	}()
)

// NewLock returns an exclusive lock handle on the directory p. It does no
// I/O; the directory and its parents are created (as container nodes) on
// first use. If p is invalid, every method returns p's error.
func NewLock(s *Session, p Path, opts ...LockOption) *Lock {
	var cfg lockConfig
	for _, o := range opts {
		if o != nil {
			o.applyLock(&cfg)
		}
	}
	fam := curatorMutex
	if cfg.layout == LayoutKazoo {
		fam = kazooMutex
	}
	return &Lock{s: s, dir: p.String(), err: p.Err(), fam: fam, cfg: cfg}
}

// Path returns the lock's directory.
func (l *Lock) Path() string { return l.dir }

// SetPurpose sets the purpose recorded in the owner metadata of the next
// acquisition (shown by Holders and zkgen inspect).
func (l *Lock) SetPurpose(purpose string) {
	l.mu.Lock()
	l.purpose = purpose
	l.mu.Unlock()
}

// Lock blocks until this handle holds the lock, ctx ends, or the session
// ends. When ctx ends first, Lock removes its contender node before
// returning ctx's error, so nothing is left in ZooKeeper. On success the lock
// is held until Unlock, or until it is lost: see Lost and Context.
func (l *Lock) Lock(ctx context.Context) error {
	_, err := l.acquire(ctx, true)
	return err
}

// TryLock takes the lock only if it is free: it reports whether this handle
// now holds it. It never waits for another holder; when the lock is taken
// its contender node is removed before it returns false.
func (l *Lock) TryLock(ctx context.Context) (bool, error) {
	return l.acquire(ctx, false)
}

func (l *Lock) acquire(ctx context.Context, wait bool) (bool, error) {
	if l.err != nil {
		return false, l.err
	}
	l.mu.Lock()
	if l.busy {
		l.mu.Unlock()
		return false, fmt.Errorf("lock %s: %w", l.dir, ErrAlreadyHeld)
	}
	l.busy, l.tried = true, true
	purpose := l.purpose
	l.mu.Unlock()

	sp := telOf(l.s).lockOp(ctx, opLockAcquire, l)
	h, err := l.contend(ctx, wait, purpose)
	sp.acquired(h, err)

	l.mu.Lock()
	defer l.mu.Unlock()
	if h == nil {
		l.busy = false
		return false, err
	}
	l.hold = h
	if !l.cfg.internal {
		holdersOf(l.s).add(l.heldKey(), l)
	}
	return true, nil
}

// lockHeld is a lock's side as the session's holders know it (holders.go).
type lockHeld struct {
	fam  *family
	kind int
	dir  string
}

// heldKey is the lock's side as the session's holders know it.
func (l *Lock) heldKey() lockHeld { return lockHeld{fam: l.fam, kind: l.kind, dir: l.dir} }

// fresh reports whether l has never tried to lock: it then answers for
// the handle of its session that holds the lock (see answering).
func (l *Lock) fresh() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.tried && !l.cfg.internal && l.err == nil
}

// answering returns the handle that answers for l, and how many handles of
// its session hold the lock's side when l is fresh (see holders.go).
func (l *Lock) answering() (*Lock, int) { return answering(l, l.fresh(), l.s, l.heldKey()) }

// contend runs the lock protocol. It returns a hold when the lock is taken,
// nil with a nil error when wait is false and the lock is taken by another.
// record is the spec record of the lock's directory (specguard.go).
func (l *Lock) record() specRecord {
	r := specRecord{Kind: "lock", Layout: l.cfg.layout.record()}
	if l.fam == curatorRW || l.fam == kazooRW {
		r.Kind = "rwlock"
	}
	return r
}

func (l *Lock) contend(ctx context.Context, wait bool, purpose string) (*hold, error) {
	if err := guardSpec(ctx, l.s, l.dir, l.cfg.acl, l.record()); err != nil {
		return nil, err
	}
	// The first children read goes out with the create (pipeline.go).
	prefix := l.fam.prefix(opsOf(l.s).Rand(), l.kind)
	l.setPending(prefix) // RequestRevoke never targets it, even before it holds
	defer l.setPending("")
	node, first, err := opsOf(l.s).CreateListed(ctx, l.cfg.acl, l.dir, prefix, ownerData(l.s, purpose), false)
	if err != nil {
		return nil, err
	}
	name := baseName(node)
	for {
		var r client.Result
		if first != nil {
			r, first = *first, nil
		} else if r, err = opsOf(l.s).ChildrenStat(ctx, l.dir); err != nil {
			return nil, abandonNode(l.s, node, err)
		}
		p := l.fam.place(r.Kids, name)
		if !p.found {
			return nil, fmt.Errorf("lock %s: contender node deleted while waiting: %w", node, ErrLockLost)
		}
		switch {
		case p.blocker == "":
			// The directory's pzxid, read after our node was created and
			// after every node that blocked us was deleted, is the token.
			h, err := startHold(ctx, l.s, node, r.Stat.Pzxid, l.cfg.revocable)
			if err != nil {
				return nil, abandonNode(l.s, node, err)
			}
			h.note = p.later && l.notes() // a waiter behind us may not know we hold
			return h, nil
		case !wait:
			return nil, abandonNode(l.s, node, nil)
		}
		// Watch only the nearest node that blocks us. If it is already
		// gone, it left between our children read and now: read again
		// rather than wait for an event that will never come (the lost
		// wake-up).
		dials := opsOf(l.s).Dials() // the wake-up and the reads on one connection, if still this
		w, err := opsOf(l.s).GetW(ctx, joinPath(l.dir, p.blocker))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, abandonNode(l.s, node, err)
		}
		ev, err := l.wake(ctx, node, w)
		if err != nil {
			return nil, err
		}
		if ev.Type == zk.EventNodeDeleted && l.handsOff(p.first) {
			if h, err := l.takeOver(ctx, node, p.blocker, p.first, dials); h != nil || err != nil {
				return h, err
			}
		}
	}
}

// wake waits for the event of the watch w on the node that blocks node.
func (l *Lock) wake(ctx context.Context, node string, w client.Result) (zk.Event, error) {
	select {
	case ev := <-w.Watch:
		return ev, nil
	case <-ctx.Done():
		return zk.Event{}, abandonNode(l.s, node, ctx.Err())
	case <-l.s.Done():
		return zk.Event{}, l.s.Err()
	}
}

// setPending records the name prefix of the node this handle acquires
// with ("" once Lock returned).
func (l *Lock) setPending(prefix string) {
	l.mu.Lock()
	l.pending = prefix
	l.mu.Unlock()
}

// mine reports whether node is this handle's own: the one it holds, or
// the one it is acquiring with (a listing may show it holding before Lock
// returns).
func (l *Lock) mine(node string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hold != nil && l.hold.node == node || l.pending != "" && strings.HasPrefix(baseName(node), l.pending)
}

// --- The hand-off
//
// A waiter woken by its blocker's deletion holds the lock if nothing
// precedes it any more. In the guide's recipe it lists the directory to see
// that: at N waiters, N names read on every hand-off, on its critical path
// (59 KB at N = 1000). A waiter knows it without the listing in two cases:
//
//   - its blocker was the first of the nodes that block it when it listed
//     (place.first; for an exclusive lock or a writer, the first node of
//     the directory; for a reader, the first writer): nothing comes before
//     such a node, ever after (new nodes come last), so once the blocker
//     is gone nothing blocks the waiter;
//   - (an exclusive lock) its blocker held the lock: it was first then,
//     and the waiter comes right after it. A holder that a waiter may
//     not know to be first (it saw a node after its own, or took the lock
//     this way, without a listing) says so when it releases: the multi
//     that deletes its node writes its node's name into the directory's
//     record (Released), and the woken waiter reads the record.
//
// The woken waiter reads the directory (its record; its pzxid, the token,
// as a listing's would be: every earlier holder's release comes before it)
// and its own node (still there: not deleted while waiting) at once: one
// round trip of constant size. When neither case holds — the blocker gave
// up without holding, or is a peer library's node, or the directory is not
// zkgen's — it lists, as the recipe does. Only a directory whose record is
// exactly the handle's gets notes (specChecks.exact); peers ignore the
// record.

// startHold starts the tenure of a lock's (or a semaphore's lease's) node:
// a loss wraps ErrLockLost, and the node is watched only once asked about
// (see startTenure).
func startHold(ctx context.Context, s *Session, node string, token int64, revocable bool) (*hold, error) {
	return startTenure(ctx, s, node, token, revocable, ErrLockLost, false)
}

// handsOff reports whether a woken waiter of this lock may take over
// without a listing: its blocker was the first of the nodes that block it,
// or (an exclusive lock) the directory carries hand-off notes.
func (l *Lock) handsOff(first bool) bool {
	return first || l.notes()
}

// notes reports whether this lock's holders write hand-off notes: an
// exclusive lock (a read/write lock's reader may hold while others before
// it still do, so its release says nothing about who is first) on a
// directory whose record is exactly the handle's.
func (l *Lock) notes() bool {
	return (l.fam == curatorMutex || l.fam == kazooMutex) && specsOf(l.s).exact(l.dir)
}

// takeOver is the wake-up of a waiter whose blocker pred was deleted (see
// the hand-off notes above): it returns the hold when the waiter holds the
// lock, nil and no error when it must list to know. dials is the session's
// connection count before the watch on pred was set.
//
// A watch event carries no zxid, so after a reconnect to a server behind
// the one that told of pred's deletion (a lagging follower: ZooKeeper only
// refuses a server behind the last zxid a reply carried), the directory
// read may not reflect the deletion, and its pzxid — the token — would be
// the previous holder's. The read proves the deletion when the record
// names pred as released (written in the deleting multi), or when no
// reconnect happened since the wait began (one server, in order: the
// event before the replies of later requests); otherwise it lists.
//
// The waiter's own node is read after the directory, not beside it: found
// then, it existed when the directory was read, so the token is a zxid of
// the waiter's tenure. Read in parallel, the node's read could be answered
// before someone deleted the node and the directory's after, and the
// token was the zxid of that delete — the token of the waiter that the
// delete let hold (reap-lock seed=994137440: two tenures with token 97).
// It costs a round trip on each hand-off that needs no listing.
func (l *Lock) takeOver(ctx context.Context, node, pred string, first bool, dials int64) (*hold, error) {
	data, st, err := opsOf(l.s).Get(ctx, l.dir)
	if err != nil {
		return nil, abandonNode(l.s, node, err)
	}
	var rec specRecord
	noted := json.Unmarshal(data, &rec) == nil && rec.Released == pred
	if !noted && (!first || opsOf(l.s).Dials() != dials) {
		return nil, nil
	}
	if _, _, err := opsOf(l.s).Get(ctx, node); client.IsNoNode(err) {
		return nil, fmt.Errorf("lock %s: contender node deleted while waiting: %w", node, ErrLockLost)
	} else if err != nil {
		return nil, abandonNode(l.s, node, err)
	}
	h, err := startHold(ctx, l.s, node, st.Pzxid, l.cfg.revocable)
	if err != nil {
		return nil, abandonNode(l.s, node, err)
	}
	h.note = l.notes() // who waits behind us listed before we held
	handOffsOf(l.s).Add(1)
	return h, nil
}

// release ends the tenure h: its node is deleted, with the hand-off note
// when a waiter may need it (see the hand-off notes above).
func (l *Lock) release(ctx context.Context, h *hold) error {
	if !h.note || !l.notes() {
		return releaseHold(ctx, l.s, h)
	}
	rec := l.record()
	rec.Zkgen, rec.Released = 1, baseName(h.node)
	note, err := json.Marshal(rec)
	if err != nil {
		return releaseHold(ctx, l.s, h)
	}
	return releaseHoldAs(ctx, l.s, h, "", func(ctx context.Context) error {
		return opsOf(l.s).DeleteNoted(ctx, h.node, l.dir, note)
	})
}

// Unlock releases the lock by deleting this handle's node; the waiters it
// blocked (one, for an exclusive lock) are woken. It returns ErrNotHeld when
// this handle does not hold the lock, and ErrLockLost when the lock had been
// lost (the node is gone already). If the delete is not confirmed — ctx
// ended, or it failed while the session lives — it carries on in the
// background (bounded) and Unlock returns the error: a node left on a live
// session would block the waiters behind it. Either way the handle can be
// locked again. On a handle that has never tried to lock, Unlock releases
// the lock held by the one handle of the session that holds it; when
// several do (readers), it returns ErrNotHeld saying so and releases
// nothing.
func (l *Lock) Unlock(ctx context.Context) error {
	return actAs(l, l.fresh(), l.s, l.heldKey(), "lock", l.dir, func(a *Lock) error { return a.unlock(ctx) })
}

func (l *Lock) unlock(ctx context.Context) (err error) {
	defer telOf(l.s).lockOp(ctx, opLockRelease, l).end(&err)
	if l.err != nil {
		return l.err
	}
	l.mu.Lock()
	h := l.hold
	l.hold = nil
	l.busy = false
	l.mu.Unlock()
	if h == nil {
		return fmt.Errorf("lock %s: %w", l.dir, ErrNotHeld)
	}
	if !l.cfg.internal {
		holdersOf(l.s).remove(l.heldKey(), l)
	}
	return l.release(ctx, h)
}

// current returns the current tenure, or nil.
func (l *Lock) current() *hold {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hold
}

// answered returns the current tenure of the handle that answers for l
// (see answering), and that handle.
func (l *Lock) answered() (*hold, *Lock) {
	a, _ := l.answering()
	return a.current(), a
}

// Token returns the fencing token of the current tenure: the zxid of the
// latest change to the lock directory's children when this handle saw it
// held the lock (the directory's pzxid in the children read that granted
// it). Every earlier holder's release is a change before that read, so the
// token is strictly greater than every earlier holder's: tokens strictly
// increase across successive holders of the path (for a read/write lock:
// across successive writers, and a reader's token is above the token of the
// writer it waited for). It is at least the creation zxid of the handle's
// own node, and costs no extra request. It is 0 when the lock is not held.
// On a handle that has never tried to lock it is the token of the one
// handle of the session that holds the lock (see Lock), else 0.
//
// What a fencing token guarantees — this one, and [Lease.Token],
// [Leadership.Epoch], [Assignment.Token] and [TTLLease.Token] alike — is
// order, nothing more: a later tenure's token is greater. A store outside
// ZooKeeper that refuses a token below the highest it has seen therefore
// refuses an earlier holder's writes once a later token has reached it,
// and not before: until the new holder's token gets there, a stale holder
// (paused past its tenure and resumed) still writes. The new holder closes
// that window by registering its token with the store before it does any
// work — the first act after Lock returns, or of Do's fn; for a
// partitioner, [WithPartitionFence] does it before the partition is handed
// out. From then on the store refuses every write carrying an earlier
// tenure's token.
func (l *Lock) Token() int64 {
	if h, _ := l.answered(); h != nil {
		return h.token
	}
	return 0
}

// Lost returns a channel that is closed when the current tenure ends: the
// lock was lost (session expired or closed, or the node deleted by someone
// else) or released with Unlock. When the lock is not held it returns a
// closed channel. A brief connection loss does not end the tenure; a
// disconnection past the session's give-up point does (see
// [WithSessionTimeout]).
//
// The session's end is always noticed. Noticing the node being deleted by
// someone else (Reap, a forced revocation) takes a watch on the node, which
// the first call of Lost or Context sets (revocable locks watch from the
// start): a lock nobody asks about costs no extra request. A handle that
// has never tried to lock answers for the session's holder (see Lock).
func (l *Lock) Lost() <-chan struct{} {
	if h, a := l.answered(); h != nil {
		armHold(a.s, h)
		askClock(l.s, h)
		return h.lost
	}
	return closedCh
}

// Held reports whether this handle holds the lock, as far as this process
// can know without asking the server: it was acquired and not released, its
// loss has not been noticed, and the session's own clock does not say the
// session is over — so the first call after the process was frozen past the
// session timeout (SIGSTOP, a paused VM) says false, before any goroutine
// of the runtime has run. What it cannot see: the node deleted by someone
// else before its watch fired, and anything that happens between this call
// and the act that follows it; only a fenced write (Guarded, or Token
// checked by the resource) closes that window. A handle that has never
// tried to lock answers for the session's holder (see Lock).
func (l *Lock) Held() bool {
	h, _ := l.answered()
	return h != nil && askClock(l.s, h)
}

// Context returns a context that is cancelled when the current tenure ends,
// so work started under the lock stops by itself when the lock is lost (see
// Lost for what is noticed when).
// context.Cause tells why: an error wrapping ErrLockLost, or ErrNotHeld after
// Unlock. When the lock is not held the context is already cancelled. Its
// Err and Done consult the session's clock when called (see Held), so
// checking ctx.Err() right after the process resumed from a pause past the
// session timeout says the lock is lost; contexts derived from it with the
// context package learn of the end when it is cancelled, a moment later.
// A handle that has never tried to lock answers for the session's holder
// (see Lock).
func (l *Lock) Context() context.Context {
	if h, _ := l.answered(); h != nil {
		armHold(l.s, h)
		return heldCtx(l.s, h)
	}
	return notHeldCtx
}

// Guarded runs ops (go-zookeeper's *zk.CreateRequest, *zk.SetDataRequest,
// *zk.DeleteRequest, *zk.CheckVersionRequest) as one ZooKeeper multi that
// also checks that this handle's lock node still exists: the writes happen
// only while the lock is held, atomically with that check. It returns the
// ops' results. If the lock is not held it returns ErrNotHeld and sends
// nothing. Whenever the write was refused or not applied because the lock
// was lost — the node gone, the session expired, the session over by its
// own clock after a pause (nothing is sent then), whatever the transport
// error on the way — the error wraps ErrLockLost. A request whose reply was
// lost returns ErrOutcomeUnknown instead (if it was applied, it was while
// the lock was held). A multi is not idempotent, so nothing is retried; a
// recoverable error means it was not applied and the lock is still held.
// A handle that has never tried to lock writes under the tenure of the one
// handle of its session that holds the lock (see Lock); when several do
// (readers), it returns ErrNotHeld saying so and sends nothing.
func (l *Lock) Guarded(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if l.err != nil {
		return nil, l.err
	}
	a, n := l.answering()
	h := a.current()
	switch {
	case h == nil && n > 1:
		return nil, errSeveral("lock", l.dir, n, ErrNotHeld)
	case h == nil:
		return nil, fmt.Errorf("lock %s: %w", l.dir, ErrNotHeld)
	}
	return guardedMulti(ctx, l.s, h, "lock "+h.node, nil, nil, ops)
}

// Revoked returns a channel closed when another contender has asked the
// current holder to release the lock (RequestRevoke). Releasing is up to the
// holder: it should finish or abandon its work and Unlock. For a lock that is
// not revocable, or when nothing is held, the channel never closes. A
// handle that has never tried to lock answers for the session's holder
// (see Lock).
func (l *Lock) Revoked() <-chan struct{} {
	if h, _ := l.answered(); h != nil && l.cfg.revocable {
		return h.revoked
	}
	return neverCh
}

// RequestRevoke asks the current holder(s) of the lock — every node that
// holds it, except this handle's own — to release it, by marking the
// revocation request in their node's data (their Revoked channel closes).
// Without force_after it returns once the requests are written. With
// force_after it then waits until the holders have released, and deletes the
// nodes of those that have not after force_after (their Lost fires); it
// returns when every one is gone, or with ctx's error. It returns
// ErrNotRevocable for a lock declared without revocation.
func (l *Lock) RequestRevoke(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	if !l.cfg.revocable {
		return fmt.Errorf("lock %s: %w", l.dir, ErrNotRevocable)
	}
	hs, err := listHolders(ctx, l.s, l.dir, l.fam)
	if err != nil {
		return err
	}
	var targets []string
	for _, h := range hs {
		if h.Holds && !l.mine(h.Node) { // never this handle's own node
			if err := markRevoke(ctx, l.s, h.Node); err != nil {
				return err
			}
			targets = append(targets, h.Node)
		}
	}
	if l.cfg.forceAfter <= 0 || len(targets) == 0 {
		return nil
	}
	deadline := time.NewTimer(l.cfg.forceAfter)
	defer deadline.Stop()
	forced := false
	for _, node := range targets {
		for !forced {
			r, err := opsOf(l.s).GetW(ctx, node)
			if errors.Is(err, zk.ErrNoNode) {
				break // released
			}
			if err != nil {
				return err
			}
			select {
			case <-r.Watch:
				continue
			case <-deadline.C:
				forced = true
			case <-ctx.Done():
				return ctx.Err()
			case <-l.s.Done():
				return l.s.Err()
			}
		}
		if forced {
			if err := opsOf(l.s).Delete(ctx, node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			opsOf(l.s).Log().Warn("revocation forced: deleted holder's lock node", "path", node, "after", l.cfg.forceAfter)
		}
	}
	return nil
}

// markRevoke records a revocation request in the data of node, keeping the
// owner metadata (compare-and-set on the node's version).
func markRevoke(ctx context.Context, s *Session, node string) error {
	for {
		data, st, err := opsOf(s).Get(ctx, node)
		if errors.Is(err, zk.ErrNoNode) {
			return nil // released meanwhile
		}
		if err != nil {
			return err
		}
		if revokeRequested(data) {
			return nil
		}
		o, ok := parseOwner(data)
		if !ok {
			// A node of another library: write Curator's request.
			data = []byte(curatorRevoke)
		} else {
			o.RevokeRequestedAt = time.Now().UTC().Truncate(time.Millisecond)
			data, _ = json.Marshal(o)
		}
		_, err = opsOf(s).SetVersion(ctx, node, data, st.Version)
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrBadVersion):
			continue // changed meanwhile (or our lost reply applied): look again
		default:
			return err
		}
	}
}

// Holders returns the lock's holder(s) followed by its waiters, in queue
// order, with their owner metadata (for a read/write lock, both sides).
// Nodes that disappear while being read are left out. An absent directory
// gives an empty list.
func (l *Lock) Holders(ctx context.Context) ([]Holder, error) {
	if l.err != nil {
		return nil, l.err
	}
	return listHolders(ctx, l.s, l.dir, l.fam)
}

// Reap deletes the lock's contender nodes (holder or waiters) created more
// than olderThan ago by the server's clock, as HBase's reapExpiredLocks does,
// and returns what it removed. Use it to break locks left by stuck processes
// whose sessions stay alive; a reaped holder's Lost fires. Ages compare the
// server's creation time with this machine's clock, so allow for skew.
func (l *Lock) Reap(ctx context.Context, olderThan time.Duration) ([]Holder, error) {
	if l.err != nil {
		return nil, l.err
	}
	return reapDir(ctx, l.s, l.dir, l.fam, olderThan)
}

// Do acquires the lock, runs fn with a context that also ends (cause
// wrapping ErrLockLost) if the lock is lost, and releases the lock, even
// when fn fails or ctx has ended. It returns the acquire's error, or fn's
// error joined with the release's (ErrLockLost if the lock was lost while
// fn ran: fn's work was then not exclusive to the end, see Guarded).
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := l.Lock(ctx); err != nil {
		return err
	}
	fctx, cancel := tenureCtx(ctx, l.Context())
	ferr := fn(fctx)
	cancel()
	rctx, rcancel := releaseCtx(ctx)
	defer rcancel()
	return client.JoinErrors(ferr, l.Unlock(rctx))
}

// lockOp starts the operation o of the lock handle l (nothing for the
// internal lock of a semaphore).
func (t *telemetry) lockOp(ctx context.Context, o op, l *Lock) span {
	if t == nil || l.cfg.internal {
		return span{}
	}
	kind, mode := l.telMode()
	return t.beginWith(ctx, o, kind, l.cfg.name, l.dir, mode)
}

// internalLock marks a semaphore's own lock: it records no telemetry.
var internalLock = lockOptionFunc(func(c *lockConfig) { c.internal = true })

// telMode is the kind attribute of a lock handle and its zkgen.lock.mode: none for an
// exclusive lock, read or write for a side of a read/write lock.
func (l *Lock) telMode() (kind string, mode attribute.KeyValue) {
	if l.fam == curatorRW || l.fam == kazooRW {
		if l.kind == kindRead {
			return "rwlock", attrMode.String("read")
		}
		return "rwlock", attrMode.String("write")
	}
	return "lock", attribute.KeyValue{}
}

// telLocker is a LockAll member that records telemetry (*Lock,
// *Semaphore): its session's telemetry and its resource name (its path
// when unnamed).
type telLocker interface {
	telResource() (*telemetry, string)
}

func (l *Lock) telResource() (*telemetry, string) { return telOf(l.s), orPath(l.cfg.name, l.dir) }

func (o NodeACL) applyLock(c *lockConfig) { o.applyHandle(&c.handleConfig) }

func (o ResourceName) applyLock(c *lockConfig) { o.applyHandle(&c.handleConfig) }

// LockHandle is the method set of *Lock (and of each side of a read/write lock).
type LockHandle interface {
	Path() string
	SetPurpose(purpose string)
	Lock(ctx context.Context) error
	TryLock(ctx context.Context) (bool, error)
	Unlock(ctx context.Context) error
	Token() int64
	Lost() <-chan struct{}
	Context() context.Context
	Guarded(ctx context.Context, ops ...any) ([]zk.MultiResponse, error)
	Revoked() <-chan struct{}
	RequestRevoke(ctx context.Context) error
	Holders(ctx context.Context) ([]Holder, error)
	Reap(ctx context.Context, olderThan time.Duration) ([]Holder, error)
	Do(ctx context.Context, fn func(ctx context.Context) error) error
}
