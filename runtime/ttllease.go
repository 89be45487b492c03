package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// --- Lease protocol (kind: lease)
//
// A lease that is not tied to a session: it is a ZooKeeper TTL node, which
// outlives the session that created it and is removed by the server once it
// has not been modified for its TTL (and has no children). The directory
// holds the slots slot-0 .. slot-<N-1>; a holder owns a slot by creating its
// node (CreateTTL fails with NodeExists when the slot is taken), so at most
// N nodes, hence N holders, exist at once. The node's data names the holder
// (its holder id), so a holder that restarts, on a new session, finds its
// slot again (re-attach) and so does a holder whose create's reply was lost.
//
// Renew is a versioned setData on the slot: it resets the node's mtime,
// which is what the server's TTL counts from (ContainerManager: a TTL node
// is due when the leader's wall clock minus its mtime exceeds the TTL).
//
// Time. The holder counts its lease from its own monotonic clock, read
// BEFORE the create or renew request is sent: the lease ends, for the
// holder, at that reading plus the TTL less 1% (Expires). The server stamps
// the node's mtime when it processes the request, so later, and removes the
// node no earlier than mtime plus the TTL, on its checkIntervalMs timer. A
// new holder can only create the slot once the node is gone. So at most N
// holders believe they hold at any moment, provided that
//
//   - the holder's clock does not run slower than the ZooKeeper leader's
//     wall clock by more than 1% over a TTL, and the leader's wall clock is
//     not stepped forward (a step backward only delays the removal);
//   - a holder stops acting on its lease at Expires.
//
// Reaping is decided on a snapshot: the server picks due nodes and deletes
// them afterwards, with no second look at their mtime, so a renewal that
// lands between the two is lost with the node. A renewal's reply carries the
// node's new mtime; when it is more than the TTL less a tenth after the
// previous one (both stamped by the server), the node may have been picked
// already, and Renew reports the lease expired and deletes the node itself.
// A renewal is only sent before Expires.
//
// A server started without zookeeper.extendedTypesEnabled=true refuses TTL
// nodes with error -6 (unimplemented): ErrTTLDisabled.

// ErrTTLDisabled means the ZooKeeper server does not accept TTL nodes: it
// must run with the system property zookeeper.extendedTypesEnabled=true.
var ErrTTLDisabled = errors.New("lease: the server refuses TTL nodes (start it with -Dzookeeper.extendedTypesEnabled=true)")

// ErrLeaseExpired means a lease is over: its TTL passed without a renewal,
// or its node was removed or taken over.
var ErrLeaseExpired = errors.New("lease: expired")

// TTLLeases is a set of N leases on a znode directory that are not tied to
// a session (kind: lease): at most N holders at a time, each lease held
// until Release or until it is not renewed within its TTL. A holder names
// itself with a holder id, unique among holders; a holder that restarts
// and calls Acquire with the same id gets its lease back. The server must
// allow TTL nodes (see ErrTTLDisabled).
type TTLLeases struct {
	s      *Session
	dir    string
	err    error
	leases int
	ttl    time.Duration
	acl    []zk.ACL
	name   string // WithResourceName
}

// TTLLease is one lease held from TTLLeases.Acquire. Methods are safe for
// concurrent use.
type TTLLease struct {
	m      *TTLLeases
	node   string
	holder string
	data   []byte

	mu       sync.Mutex
	czxid    int64     // identifies our node
	version  int32     // its data version after our last write
	mtime    int64     // its mtime after our last write (server ms)
	deadline time.Time // the end of the lease by the holder's clock
	released bool
	unsure   bool // a write of ours may have applied unseen (see settle)

	lossCounted atomic.Bool // its expiry was counted as a lost tenure
}

// leaseData is the data of a slot node.
type leaseData struct {
	Holder   string    `json:"holder"`
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Acquired time.Time `json:"acquired"` // client clock
}

// maxTTL is the largest TTL ZooKeeper takes (40 bits of milliseconds).
const maxTTL = time.Duration(1<<40-1) * time.Millisecond

// NewTTLLeases returns a handle on the leases at p: leases slots, each
// lease lasting ttl unless renewed. It does no I/O. Every participant must
// use the same numbers. opts: WithNodeACL.
func NewTTLLeases(s *Session, p Path, leases int, ttl time.Duration, opts ...HandleOption) *TTLLeases {
	cfg := handleOptions(opts)
	m := &TTLLeases{s: s, dir: p.String(), err: p.Err(), leases: leases, ttl: ttl, acl: cfg.acl, name: cfg.name}
	switch {
	case m.err != nil:
	case leases < 1:
		m.err = fmt.Errorf("lease %s: leases must be >= 1, got %d", m.dir, leases)
	case ttl < time.Millisecond || ttl > maxTTL:
		m.err = fmt.Errorf("lease %s: ttl must be between 1ms and %v, got %v", m.dir, maxTTL, ttl)
	}
	return m
}

// Path returns the leases' directory.
func (m *TTLLeases) Path() string { return m.dir }

// TTL returns the time a lease lasts without a renewal.
func (m *TTLLeases) TTL() time.Duration { return m.ttl }

func (m *TTLLeases) slot(i int) string { return joinPath(m.dir, "slot-"+strconv.Itoa(i)) }

// slotIndex returns the index of a slot node's name, or -1.
func (m *TTLLeases) slotIndex(name string) int { return slotIndex(name, m.leases) }

// slotIndex returns the index of a slot node's name among leases slots
// (slot-<i>, i < leases, as slot names it), or -1.
func slotIndex(name string, leases int) int {
	n, ok := strings.CutPrefix(name, "slot-")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 || i >= leases || strconv.Itoa(i) != n {
		return -1
	}
	return i
}

// LeaseHolder describes one held slot of a TTLLeases.
type LeaseHolder struct {
	Node     string    // the slot node
	Holder   string    // the holder id
	Renewed  time.Time // the node's mtime (server clock)
	Expires  time.Time // Renewed + TTL: the earliest the server removes it
	Host     string    // where the holder ran when it acquired
	PID      int       // its process id
	Acquired time.Time // when it acquired (its clock)
}

// Holders lists the held slots in slot order. An absent directory gives an
// empty list.
func (m *TTLLeases) Holders(ctx context.Context) ([]LeaseHolder, error) {
	if m.err != nil {
		return nil, m.err
	}
	kids, err := opsOf(m.s).Children(ctx, m.dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []LeaseHolder
	for i := 0; i < m.leases; i++ {
		if !containsString(kids, "slot-"+strconv.Itoa(i)) {
			continue
		}
		data, st, err := opsOf(m.s).Get(ctx, m.slot(i))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var d leaseData
		_ = json.Unmarshal(data, &d)
		renewed := time.UnixMilli(st.Mtime).UTC()
		out = append(out, LeaseHolder{Node: m.slot(i), Holder: d.Holder, Renewed: renewed, Expires: renewed.Add(m.ttl),
			Host: d.Host, PID: d.PID, Acquired: d.Acquired})
	}
	return out, nil
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Acquire blocks until holder holds a lease, ctx ends, or the session ends.
// If holder already holds one (its node is there: it restarted, or an
// earlier Acquire's reply was lost), Acquire takes it back with a renewal.
// A slot taken by others frees when its holder releases it or when the
// server removes it after its TTL. On ctx's end no node of this call is
// left. holder must not be empty and must be unique among the holders.
func (m *TTLLeases) Acquire(ctx context.Context, holder string) (_ *TTLLease, err error) {
	defer telOf(m.s).begin(ctx, opLeaseAcquire, "lease", m.name, m.dir).end(&err)
	if m.err != nil {
		return nil, m.err
	}
	if holder == "" {
		return nil, fmt.Errorf("lease %s: empty holder id", m.dir)
	}
	if err := guardSpec(ctx, m.s, m.dir, m.acl, specRecord{Kind: "lease", Leases: m.leases}); err != nil {
		return nil, err
	}
	data, _ := json.Marshal(leaseData{Holder: holder, Host: hostname(), PID: os.Getpid(),
		Acquired: time.Now().UTC().Truncate(time.Millisecond)})
	for {
		r, err := m.scan(ctx)
		if err != nil {
			return nil, err
		}
		taken := make([]bool, m.leases)
		for _, k := range r.Kids {
			if i := m.slotIndex(k); i >= 0 {
				taken[i] = true
			}
		}
		// Ours already? Re-attach.
		for i, t := range taken {
			if !t {
				continue
			}
			le, err := m.reattach(ctx, i, holder)
			if le != nil || err != nil {
				return le, err
			}
		}
		for i, t := range taken {
			if t {
				continue
			}
			le, err := m.create(ctx, i, holder, data)
			if le != nil || err != nil {
				return le, err
			}
		}
		if !allTrue(taken) {
			continue // a free slot was taken meanwhile: look again
		}
		select {
		case <-r.Watch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-m.s.Done():
			return nil, m.s.Err()
		}
	}
}

// scan lists the slots with a children watch on the directory, creating
// the directory again if the server removed it (a container, once empty).
func (m *TTLLeases) scan(ctx context.Context) (client.Result, error) {
	for {
		r, err := opsOf(m.s).ChildrenW(ctx, m.dir)
		if !errors.Is(err, zk.ErrNoNode) {
			return r, err
		}
		specsOf(m.s).ok.Delete(m.dir)
		if err := guardSpec(ctx, m.s, m.dir, m.acl, specRecord{Kind: "lease", Leases: m.leases}); err != nil {
			return client.Result{}, err
		}
	}
}

func allTrue(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return true
}

// reattach takes slot i back if holder's node is there: nil, nil when the
// slot is another holder's (or gone).
func (m *TTLLeases) reattach(ctx context.Context, i int, holder string) (*TTLLease, error) {
	node := m.slot(i)
	data, st, err := opsOf(m.s).Get(ctx, node)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d leaseData
	if json.Unmarshal(data, &d) != nil || d.Holder != holder {
		return nil, nil
	}
	le := &TTLLease{m: m, node: node, holder: holder, data: data, czxid: st.Czxid, version: st.Version, mtime: st.Mtime}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), client.CleanupTimeout)
	defer cancel()
	if err := le.renew(wctx, false); err != nil {
		if errors.Is(err, ErrLeaseExpired) {
			return nil, nil // it had run out: its slot is free (or about to be)
		}
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, m.abandon(le, ctx.Err())
	}
	return le, nil
}

// create tries to take the free slot i. It returns nil, nil when another
// holder took it first. The create runs detached from ctx, so its outcome
// is always known; a slot taken as ctx ended is given back.
func (m *TTLLeases) create(ctx context.Context, i int, holder string, data []byte) (*TTLLease, error) {
	node := m.slot(i)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), client.CleanupTimeout)
	defer cancel()
	acl := opsOf(m.s).NodeACL(m.acl)
	if err := opsOf(m.s).Creatable(acl); err != nil {
		return nil, client.OpError("create", node, err)
	}
	start := time.Now()
	var uncertain, exists, gone bool
	err := opsOf(m.s).RetryUncertain(wctx, client.UncertainWrite{Op: "create", Path: node,
		Attempt: func(int) (client.Outcome, error) {
			_, err := client.Await(wctx, m.s, func() (string, error) {
				return m.s.Conn().CreateTTL(node, data, zk.FlagTTL, acl, m.ttl)
			})
			switch {
			case err == nil:
				return client.OutcomeKnown, nil
			case isUnimplemented(err):
				return client.OutcomeKnown, fmt.Errorf("lease %s: %w (%v)", node, ErrTTLDisabled, err)
			case errors.Is(err, zk.ErrNodeExists):
				exists = true
				return client.OutcomeKnown, nil
			case errors.Is(err, zk.ErrNoNode):
				gone = true // the directory went (emptied): the caller looks again
				return client.OutcomeKnown, nil
			case IsRecoverable(err):
				uncertain = true
				return client.OutcomeHidden, err
			}
			return client.OutcomeKnown, client.OpError("create", node, err)
		}})
	switch {
	case err != nil:
		return nil, err
	case exists && uncertain:
		// Ours (the lost reply's create applied) or another's: a re-attach
		// settles it, and gives a deadline from a renewal.
		return m.reattach(ctx, i, holder)
	case exists, gone:
		return nil, nil
	}
	// Created: read its identity (the create's reply carries no stat).
	_, st, err := opsOf(m.s).Get(wctx, node)
	if err != nil {
		return nil, client.OpError("get", node, err)
	}
	le := &TTLLease{m: m, node: node, holder: holder, data: data, czxid: st.Czxid, version: st.Version,
		mtime: st.Mtime, deadline: m.deadline(start)}
	if ctx.Err() != nil {
		return nil, m.abandon(le, ctx.Err())
	}
	return le, nil
}

// abandon gives back a lease taken as ctx ended, and returns cause.
func (m *TTLLeases) abandon(le *TTLLease, cause error) error {
	rctx, cancel := context.WithTimeout(context.Background(), client.CleanupTimeout)
	defer cancel()
	if err := le.Release(rctx); err != nil && !errors.Is(err, ErrLeaseExpired) {
		return client.JoinErrors(cause, err)
	}
	return cause
}

// deadline is the end, by the holder's clock, of a lease written by a
// request sent after start: the TTL less 1% for clock drift.
func (m *TTLLeases) deadline(start time.Time) time.Time { return start.Add(m.ttl - m.ttl/100) }

// isUnimplemented reports ZooKeeper's error -6 (unimplemented), which
// go-zookeeper v1.0.4 does not name: a server without extended types
// answers it to CreateTTL.
func isUnimplemented(err error) bool {
	return err != nil && strings.Contains(err.Error(), "unknown error: -6")
}

// Node returns the lease's slot node.
func (l *TTLLease) Node() string { return l.node }

// Holder returns the holder id.
func (l *TTLLease) Holder() string { return l.holder }

// Expires returns when the lease ends by this process's clock unless it is
// renewed: the reading of the monotonic clock taken before the last create
// or renewal was sent, plus the TTL less 1%. The holder must stop acting
// on the lease at that time; the server removes its node later. After
// Release it returns the zero time.
func (l *TTLLease) Expires() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return time.Time{}
	}
	return l.deadline
}

// Held reports whether the lease is still on by this process's clock: not
// released, not found expired, and Expires not passed — so the first call
// after the process was frozen past the lease's end says false. What it
// cannot see is what happens between the call and the act that follows;
// Token, checked where the work lands (see [Lock.Token]), fences that.
func (l *TTLLease) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.released && time.Now().Before(l.deadline)
}

// Token returns the lease's fencing token: the creation zxid of its slot
// node. A slot's node is created anew by each holder after the previous
// one's is gone, so tokens strictly increase across the successive holders
// of a slot (not across slots). A resource that remembers the highest token
// per slot (Node) and refuses lower ones keeps out a holder whose lease ran
// out and was taken over only once the new holder's token reached it:
// register the token there right after Acquire returns, before any work
// (see [Lock.Token]).
func (l *TTLLease) Token() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.czxid
}

// Guarded runs ops (go-zookeeper's *zk.CreateRequest, *zk.SetDataRequest,
// *zk.DeleteRequest, *zk.CheckVersionRequest) as one ZooKeeper multi that
// also checks that the slot node is still at the version this holder last
// wrote: the writes happen only while the lease is held. From Expires on
// nothing is sent (the slot may be another holder's, at the same version)
// and the error wraps ErrLeaseExpired, as it does when the check is
// refused or the write was not applied because the lease ran out;
// ErrNotHeld after Release; ErrOutcomeUnknown when the reply was lost (if
// it was applied, it was while the lease was held). It does not renew the
// lease, and waits for a Renew in progress. The window it leaves: a
// request sent just before Expires and delayed past the TTL on its way;
// Token, checked where the work lands, fences that too.
func (l *TTLLease) Guarded(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if l.m == nil {
		return nil, errZeroValue
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil, fmt.Errorf("lease %s: %w", l.node, ErrNotHeld)
	}
	if err := l.settle(ctx); err != nil {
		return nil, err
	}
	label := "lease " + l.node
	return fencedMulti(ctx, l.m.s, fence{
		label:  label,
		checks: []any{&zk.CheckVersionRequest{Path: l.node, Version: l.version}},
		on:     func() bool { return time.Now().Before(l.deadline) }, // not tied to the session
		lost: func(why string, cause error) error {
			if cause != nil {
				return fmt.Errorf("%s: %s: %w (%w)", label, why, ErrLeaseExpired, cause)
			}
			return fmt.Errorf("%s: %s: %w", label, why, ErrLeaseExpired)
		},
	}, ops)
}

// Renew extends the lease by a full TTL from now. It returns an error
// wrapping ErrLeaseExpired, and sends nothing, when the lease has expired
// by Expires; it also returns ErrLeaseExpired when the node turns out
// removed or taken over, or when the renewal reached the server more than
// 90% of the TTL after the previous write (the server may have picked the
// node for removal already; the node is then deleted) — so renew well
// before Expires, every third of the TTL, say. ErrNotHeld after Release.
// Other errors (connection, ctx) leave Expires as it was.
func (l *TTLLease) Renew(ctx context.Context) (err error) {
	if l.m == nil {
		return errZeroValue
	}
	defer telOf(l.m.s).begin(ctx, opLeaseRenew, "lease", l.m.name, l.m.dir).end(&err)
	defer l.countLoss(&err)
	return l.renew(ctx, true)
}

// countLoss counts the lease as a lost tenure, once, when *err says it
// expired (Renew, Release): it ended by loss, not release.
func (l *TTLLease) countLoss(err *error) {
	if errors.Is(*err, ErrLeaseExpired) && l.lossCounted.CompareAndSwap(false, true) {
		telOf(l.m.s).tenureLost("lease", l.m.name, l.m.dir)
	}
}

// renew writes the node with a versioned setData. checkDeadline is false
// for a re-attach, whose deadline is unknown.
func (l *TTLLease) renew(ctx context.Context, checkDeadline bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return fmt.Errorf("lease %s: %w", l.node, ErrNotHeld)
	}
	start := time.Now()
	if checkDeadline && !start.Before(l.deadline) {
		return fmt.Errorf("lease %s: %w (at %v)", l.node, ErrLeaseExpired, l.deadline.Format(time.RFC3339Nano))
	}
	if err := l.settle(ctx); err != nil {
		return err
	}
	var until time.Time // a re-attach's write is settled by its czxid check
	if checkDeadline {
		until = l.deadline
	}
	st, err := l.set(ctx, until)
	if errors.Is(err, errPastDeadline) {
		return fmt.Errorf("lease %s: %w (at %v; nothing sent)", l.node, ErrLeaseExpired, l.deadline.Format(time.RFC3339Nano))
	}
	if err != nil {
		return err
	}
	m := l.m
	if st.Czxid != l.czxid {
		opsOf(m.s).Log().Warn("lease: renewal wrote a node that is not ours", "path", l.node)
		return fmt.Errorf("lease %s: %w (node taken over)", l.node, ErrLeaseExpired)
	}
	if gap := time.Duration(st.Mtime-l.mtime) * time.Millisecond; gap > m.ttl-m.ttl/10 {
		// The server may have picked the node for removal before this
		// write: give it up.
		l.version, l.mtime = st.Version, st.Mtime
		l.released = true
		_ = l.deleteOurs(ctx, time.Time{}) // if it fails, the server removes it after the TTL
		return fmt.Errorf("lease %s: %w (renewed %v after the previous write, TTL %v)", l.node, ErrLeaseExpired, gap, m.ttl)
	}
	l.version, l.mtime, l.deadline = st.Version, st.Mtime, m.deadline(start)
	return nil
}

// set sends the renewal's setData at our version until its outcome is
// known, and returns the node's stat after it. A write whose reply is lost
// is looked for before it is sent again; if ctx ends first, the lease is
// marked unsure (see settle). With a non-zero until, nothing is sent from
// until on (errPastDeadline): the slot may then hold another holder's
// node at our version, which a renewal would overwrite (see Release).
func (l *TTLLease) set(ctx context.Context, until time.Time) (st *zk.Stat, err error) {
	s := l.m.s
	err = opsOf(s).RetryUncertain(ctx, client.UncertainWrite{Op: "set", Path: l.node,
		Attempt: func(int) (client.Outcome, error) {
			var err error
			st, err = client.Await(ctx, s, func() (*zk.Stat, error) {
				if !until.IsZero() && !time.Now().Before(until) {
					return nil, errPastDeadline
				}
				return s.Conn().Set(l.node, l.data, l.version)
			})
			switch {
			case err == nil, errors.Is(err, errPastDeadline):
				return client.OutcomeKnown, err
			case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
				return client.OutcomeKnown, fmt.Errorf("lease %s: %w (%v)", l.node, ErrLeaseExpired, err)
			case !IsRecoverable(err):
				l.unsure = true // the write may apply after all
				return client.OutcomeKnown, client.OpError("set", l.node, err)
			}
			return client.OutcomeHidden, err
		},
		Settle: func(ctx context.Context) (client.Outcome, error) {
			cur, err := l.look(ctx)
			switch {
			case err != nil:
				l.unsure = true
				return client.OutcomeKnown, err
			case cur.Version == l.version+1:
				st = cur // the lost write applied (sent after start)
				return client.OutcomeKnown, nil
			case cur.Version != l.version:
				return client.OutcomeKnown, fmt.Errorf("lease %s: %w (node written by another)", l.node, ErrLeaseExpired)
			}
			return client.OutcomeResend, nil
		},
		Interrupted: func(err error) error {
			l.unsure = true // a hidden write, not looked for: settle finds out
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// settle brings an unsure lease (a write of ours whose outcome was never
// seen: ctx ended, or the session did) up to date with its node: version
// and mtime, but not the deadline, which that write cannot extend.
func (l *TTLLease) settle(ctx context.Context) error {
	if !l.unsure {
		return nil
	}
	cur, err := l.look(ctx)
	if err != nil {
		return err
	}
	l.version, l.mtime, l.unsure = cur.Version, cur.Mtime, false
	return nil
}

// look reads the node's stat; ErrLeaseExpired when it is gone or is
// another holder's.
func (l *TTLLease) look(ctx context.Context) (*zk.Stat, error) {
	_, cur, err := opsOf(l.m.s).Get(ctx, l.node)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, fmt.Errorf("lease %s: %w (node gone)", l.node, ErrLeaseExpired)
	case err != nil:
		return nil, client.OpError("get", l.node, err)
	case cur.Czxid != l.czxid:
		return nil, fmt.Errorf("lease %s: %w (node taken over)", l.node, ErrLeaseExpired)
	}
	return cur, nil
}

// Release gives the lease back by deleting its node, so another holder can
// take the slot at once. It returns ErrNotHeld when released already, and
// an error wrapping ErrLeaseExpired when the lease is over by Expires: then
// it sends nothing, since the slot may hold another holder's node by now
// (its own node, if still there, goes when its TTL runs out). It never
// removes a node another holder created since. If ctx ends before the
// delete is confirmed, the delete carries on in the background (bounded,
// and never past Expires) and Release returns ctx's error; a node left
// anyway goes when its TTL runs out.
func (l *TTLLease) Release(ctx context.Context) (err error) {
	if l.m == nil {
		return errZeroValue
	}
	defer telOf(l.m.s).begin(ctx, opLeaseRelease, "lease", l.m.name, l.m.dir).end(&err)
	defer l.countLoss(&err)
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return fmt.Errorf("lease %s: %w", l.node, ErrNotHeld)
	}
	l.released = true
	deadline := l.deadline
	l.mu.Unlock()
	expired := func() error {
		return fmt.Errorf("lease %s: %w (at %v; nothing deleted)", l.node, ErrLeaseExpired, deadline.Format(time.RFC3339Nano))
	}
	if !time.Now().Before(deadline) {
		// Once the lease is over by our clock the server may have removed
		// our node and another holder created the slot again, at the same
		// data version as a node we never renewed: a delete could remove
		// that holder's lease. Send nothing; our node, if it is still
		// there, goes when its TTL runs out.
		return expired()
	}
	done := make(chan error, 1)
	go func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), client.CleanupTimeout)
		defer cancel()
		l.mu.Lock()
		defer l.mu.Unlock()
		done <- l.deleteOurs(dctx, deadline)
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if errors.Is(err, errPastDeadline) {
		return expired()
	}
	return err
}

// errPastDeadline stops deleteOurs at the lease's end (see Release).
var errPastDeadline = errors.New("lease: past its end")

// deleteOurs deletes the node if it is still ours: same creation zxid, at
// the version we last wrote. After a connection loss it looks before it
// deletes again, so it never deletes a node another holder created since.
// With a non-zero until, it sends no delete from until on and returns
// errPastDeadline: the node may then be another holder's at our version
// (see Release). The one window left is a delete sent just before until
// and delayed past the TTL on its way (the process paused between the
// clock reading and the send): only the server's removal fences that.
func (l *TTLLease) deleteOurs(ctx context.Context, until time.Time) error {
	s := l.m.s
	if err := l.settle(ctx); err != nil {
		if errors.Is(err, ErrLeaseExpired) {
			return nil // gone, or another's: nothing of ours to delete
		}
		return err
	}
	version := l.version
	return opsOf(s).RetryUncertain(ctx, client.UncertainWrite{Op: "delete", Path: l.node,
		Attempt: func(n int) (client.Outcome, error) {
			_, err := client.Await(ctx, s, func() (struct{}, error) {
				if !until.IsZero() && !time.Now().Before(until) {
					return struct{}{}, errPastDeadline
				}
				return struct{}{}, s.Conn().Delete(l.node, version)
			})
			switch {
			case err == nil, errors.Is(err, zk.ErrNoNode):
				return client.OutcomeKnown, nil
			case errors.Is(err, errPastDeadline):
				return client.OutcomeKnown, err
			case errors.Is(err, zk.ErrBadVersion) && n == 1:
				return client.OutcomeKnown, fmt.Errorf("lease %s: %w (node written by another)", l.node, ErrLeaseExpired)
			case errors.Is(err, zk.ErrBadVersion):
				return client.OutcomeHidden, err // written since our look: look again
			case !IsRecoverable(err):
				return client.OutcomeKnown, client.OpError("delete", l.node, err)
			}
			return client.OutcomeHidden, err
		},
		Settle: func(ctx context.Context) (client.Outcome, error) {
			_, cur, err := opsOf(s).Get(ctx, l.node)
			switch {
			case errors.Is(err, zk.ErrNoNode):
				return client.OutcomeKnown, nil // the lost delete applied
			case err != nil:
				return client.OutcomeKnown, client.OpError("get", l.node, err)
			case cur.Czxid != l.czxid:
				return client.OutcomeKnown, nil // ours went; this is another holder's
			}
			version = cur.Version
			return client.OutcomeResend, nil
		}})
}
