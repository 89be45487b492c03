package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Barrier is the ZooKeeper guide's barrier: it is up while its node exists.
// Raise creates the node, Lower deletes it, and Wait blocks while it
// exists. Waiters watch the node itself; lowering wakes them all, which is
// the point of a barrier.
type Barrier struct {
	s    *Session
	node string
	err  error
	acl  []zk.ACL // of created nodes; empty: the session's default
	name string   // WithResourceName
}

// NewBarrier returns a handle on the barrier whose node is p. It does no I/O.
// opts: WithNodeACL.
func NewBarrier(s *Session, p Path, opts ...HandleOption) *Barrier {
	return &Barrier{s: s, node: p.String(), err: p.Err(), acl: handleOptions(opts).acl, name: handleOptions(opts).name}
}

// Path returns the barrier node's path.
func (b *Barrier) Path() string { return b.node }

// Raise puts the barrier up by creating its node (a persistent node, with
// missing parents created as containers). Raising a raised barrier is not an
// error. The node stays until Lower, whoever calls it.
func (b *Barrier) Raise(ctx context.Context) (err error) {
	defer telOf(b.s).begin(ctx, opRaise, "barrier", b.name, b.node).end(&err)
	if b.err != nil {
		return b.err
	}
	parent := b.node[:strings.LastIndexByte(b.node, '/')]
	for {
		_, err := opsOf(b.s).CreateIfAbsent(ctx, b.node, nil, 0, b.acl)
		if errors.Is(err, zk.ErrNoNode) && parent != "" {
			if err := opsOf(b.s).EnsurePath(ctx, b.acl, parent); err != nil {
				return err
			}
			continue
		}
		return err
	}
}

// Lower takes the barrier down by deleting its node, releasing every
// waiter. Lowering a barrier that is not up is not an error.
func (b *Barrier) Lower(ctx context.Context) (err error) {
	defer telOf(b.s).begin(ctx, opLower, "barrier", b.name, b.node).end(&err)
	if b.err != nil {
		return b.err
	}
	err = opsOf(b.s).Delete(ctx, b.node, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// Wait blocks while the barrier is up and returns nil once its node is gone
// (at once if it is not up). It reads the node with a watch and reads again
// after every event, so a barrier lowered and raised again between two
// events keeps it waiting; there is no polling. When ctx ends it returns
// ctx's error; it creates nothing, so nothing is left in ZooKeeper (the
// server drops the data watch when the node goes or the session ends).
func (b *Barrier) Wait(ctx context.Context) (err error) {
	defer telOf(b.s).begin(ctx, opBarrierWait, "barrier", b.name, b.node).end(&err)
	if b.err != nil {
		return b.err
	}
	for {
		r, err := opsOf(b.s).GetW(ctx, b.node)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-r.Watch:
		case <-ctx.Done():
			return ctx.Err()
		case <-b.s.Done():
			return b.s.Err()
		}
	}
}

// --- Double barrier protocol
//
// Each participant is an ephemeral sequential node under the barrier
// directory (_c_<guid>-p-<seq>, GUID-protected), so a crashed participant
// neither counts as entered nor blocks the others from leaving. The last to
// arrive creates <dir>/ready, which wakes those waiting in Enter (they
// watch it before creating their node). Leaving uses the guide's
// lowest/highest scheme (leaveTurn): the lowest node's owner waits for the
// highest to go, every other participant deletes its node and waits for the
// lowest to go, so each deletion wakes one process, and the last deletion
// everyone. The participant that leaves last deletes the ready node.

// DoubleBarrier is the ZooKeeper guide's double barrier for a fixed number
// of participants: Enter returns once that many have entered, Leave once
// all have left. A participant whose session ends neither counts as entered
// nor keeps the others from leaving.
//
// A DoubleBarrier handle is one participant for one round: use a fresh path
// (for example a path parameter per round) for every round. A handle that
// has never entered (a generated accessor's, made per call) answers Leave
// and Node for the one handle of its session that has entered and not
// left, when exactly one has: c.Epoch(n).Leave leaves what
// c.Epoch(n).Enter entered.
type DoubleBarrier struct {
	s    *Session
	dir  string
	err  error
	size int
	acl  []zk.ACL // of created nodes; empty: the session's default
	name string   // WithResourceName

	mu    chan struct{} // serialises Enter and Leave
	nmu   sync.Mutex
	node  string // our participant node while entered
	tried bool   // Enter was called: the handle answers for itself
}

const (
	readyName       = "ready"
	participantMark = "p-"
)

// NewDoubleBarrier returns a participant in the double barrier at p for size
// participants. It does no I/O. Every participant must use the same size.
// opts: WithNodeACL.
func NewDoubleBarrier(s *Session, p Path, size int, opts ...HandleOption) *DoubleBarrier {
	d := &DoubleBarrier{s: s, dir: p.String(), err: p.Err(), size: size, mu: make(chan struct{}, 1), acl: handleOptions(opts).acl, name: handleOptions(opts).name}
	if d.err == nil && size < 1 {
		d.err = fmt.Errorf("double barrier %s: size must be >= 1, got %d", d.dir, size)
	}
	return d
}

// Path returns the barrier directory.
func (d *DoubleBarrier) Path() string { return d.dir }

// Node returns this participant's node while it is entered, else "". On a
// handle that has never entered it is the node of the one handle of its
// session that has entered and not left, else "".
func (d *DoubleBarrier) Node() string {
	a, _ := answering(d, d.fresh(), d.s, barrierHeld{d.dir})
	return a.own()
}

func (d *DoubleBarrier) own() string {
	d.nmu.Lock()
	defer d.nmu.Unlock()
	return d.node
}

// setNode records the participant's node ("" once it leaves) and keeps
// the session's holders in step.
func (d *DoubleBarrier) setNode(n string) {
	d.nmu.Lock()
	d.node = n
	d.nmu.Unlock()
	if n != "" {
		holdersOf(d.s).add(barrierHeld{d.dir}, d)
	} else {
		holdersOf(d.s).remove(barrierHeld{d.dir}, d)
	}
}

// barrierHeld is a double barrier as the session's holders know it
// (holders.go).
type barrierHeld struct{ dir string }

// fresh reports whether Enter was never called on d: it then answers for
// the participant of its session (see holders.go).
func (d *DoubleBarrier) fresh() bool {
	d.nmu.Lock()
	defer d.nmu.Unlock()
	return !d.tried && d.err == nil
}

func (d *DoubleBarrier) readyPath() string { return joinPath(d.dir, readyName) }

// participants returns the participant nodes of kids in sequence order.
func participants(kids []string) []contender {
	return curatorParticipants.sortContenders(kids)
}

var curatorParticipants = &family{markers: []string{participantMark}, blockedBy: [][]bool{{false}}}

// Enter registers this participant and blocks until size participants have
// entered (or the barrier was already complete). It returns ErrAlreadyHeld
// if this handle has entered and not left. When ctx ends first, Enter
// deletes its participant node (with a fresh, bounded context) and returns
// ctx's error; the exists watch on the ready node stays with the session
// until the node appears.
func (d *DoubleBarrier) Enter(ctx context.Context) (err error) {
	defer telOf(d.s).begin(ctx, opBarrierEnter, "double_barrier", d.name, d.dir).end(&err)
	if err := d.lock(ctx); err != nil {
		return err
	}
	defer d.unlock()
	d.nmu.Lock()
	d.tried = true
	d.nmu.Unlock()
	if d.own() != "" {
		return fmt.Errorf("double barrier %s: %w", d.dir, ErrAlreadyHeld)
	}
	if err := guardSpec(ctx, d.s, d.dir, d.acl, specRecord{Kind: "double_barrier", Size: d.size}); err != nil {
		return err
	}
	// Watch for ready before registering, so its creation cannot be missed.
	up, _, ready, err := opsOf(d.s).ExistsW(ctx, d.readyPath())
	if err != nil {
		return err
	}
	node, err := opsOf(d.s).CreateProtected(ctx, d.acl, d.dir, curatorParticipants.prefix(opsOf(d.s).Rand(), 0), ownerData(d.s, ""))
	if err != nil {
		return err
	}
	if !up {
		lowest, err := d.complete(ctx)
		if err != nil {
			return abandonNode(d.s, node, err)
		}
		if lowest != nil { // for Leave: see leaveFast
			if _, err := opsOf(d.s).CreateIfAbsent(ctx, d.readyPath(), lowest, 0, d.acl); err != nil {
				return abandonNode(d.s, node, err)
			}
		} else {
			select {
			case <-ready:
			case <-ctx.Done():
				return abandonNode(d.s, node, ctx.Err())
			case <-d.s.Done():
				return d.s.Err()
			}
		}
	}
	d.setNode(node)
	return nil
}

// complete returns the lowest participant's name once size participants
// have entered, nil before. It reads the directory's child count first and
// lists the children only when the barrier could be complete: the count
// takes in every child (ready if it appeared meanwhile, any stray node), so
// it is never below the participants, and only the last arrivals list n
// names instead of every participant.
func (d *DoubleBarrier) complete(ctx context.Context) ([]byte, error) {
	_, st, err := opsOf(d.s).Get(ctx, d.dir)
	if err != nil {
		return nil, err
	}
	if int(st.NumChildren) < d.size {
		return nil, nil
	}
	kids, err := opsOf(d.s).Children(ctx, d.dir)
	if err != nil {
		return nil, err
	}
	if ps := participants(kids); len(ps) >= d.size {
		return []byte(ps[0].name), nil
	}
	return nil, nil
}

// lock serialises Enter and Leave; it gives up when ctx ends. A free
// mutex is taken even when ctx has ended, not left to select's random
// pick: a Leave with an ended ctx still deletes its node (see Leave), and
// a seed's replay takes the same branch.
func (d *DoubleBarrier) lock(ctx context.Context) error {
	if d.err != nil {
		return d.err
	}
	select {
	case d.mu <- struct{}{}:
		return nil
	default:
	}
	select {
	case d.mu <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *DoubleBarrier) unlock() { <-d.mu }

// Leave unregisters this participant and blocks until every participant has
// left (or its session ended: participants are ephemeral). It returns
// ErrNotHeld if this handle has not entered. When ctx ends first, Leave
// returns ctx's error; its node is deleted anyway (the participant has left,
// it only stops waiting for the others), and the handle can Enter a fresh
// barrier path. On a handle that has never entered, Leave leaves as the
// one handle of its session that has entered and not left; when several
// have, it returns ErrNotHeld saying so and leaves nothing.
func (d *DoubleBarrier) Leave(ctx context.Context) error {
	return actAs(d, d.fresh(), d.s, barrierHeld{d.dir}, "double barrier", d.dir, func(a *DoubleBarrier) error { return a.leave(ctx) })
}

func (d *DoubleBarrier) leave(ctx context.Context) (err error) {
	defer telOf(d.s).begin(ctx, opBarrierLeave, "double_barrier", d.name, d.dir).end(&err)
	if err := d.lock(ctx); err != nil {
		return err
	}
	defer d.unlock()
	node := d.own()
	if node == "" {
		return fmt.Errorf("double barrier %s: %w", d.dir, ErrNotHeld)
	}
	name := baseName(node)
	d.setNode("")
	if err := d.leaveFast(ctx, node, name); err != nil {
		return err
	}
	for {
		kids, err := opsOf(d.s).Children(ctx, d.dir)
		if err != nil {
			if ctx.Err() != nil {
				return abandonNode(d.s, node, ctx.Err())
			}
			return err
		}
		ps := participants(kids)
		if len(ps) == 0 {
			return d.dropReady(ctx)
		}
		me := indexOf(ps, name)
		if me >= 0 && len(ps) == 1 {
			if err := opsOf(d.s).Delete(ctx, node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			return d.dropReady(ctx)
		}
		wait, err := d.leaveTurn(ctx, node, ps, me)
		if err != nil {
			return err
		}
		w, err := opsOf(d.s).GetW(ctx, joinPath(d.dir, wait))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return abandonNode(d.s, node, ctx.Err())
			}
			return err
		}
		select {
		case <-w.Watch:
		case <-ctx.Done():
			return abandonNode(d.s, node, ctx.Err())
		case <-d.s.Done():
			return d.s.Err()
		}
	}
}

// leaveFast is the guide's "delete your node and wait for the lowest" for
// a participant that is not the lowest, without listing the directory: the
// participant that created the ready node wrote the lowest participant's
// name in it (from the listing it had just made). Listing n names in every
// Leave was n² bytes for a barrier of n. It returns once the lowest is gone,
// or at once when ready records no name (a barrier made by an older
// version) or this participant is the lowest; Leave's loop then settles
// the rest as before, listing an almost empty directory.
func (d *DoubleBarrier) leaveFast(ctx context.Context, node, name string) error {
	data, _, err := opsOf(d.s).Get(ctx, d.readyPath())
	lowest := string(data)
	if err != nil || lowest == "" || lowest == name || checkSegment(lowest) != "" {
		return nil // the loop lists and decides
	}
	if err := opsOf(d.s).Delete(ctx, node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	w, err := opsOf(d.s).GetW(ctx, joinPath(d.dir, lowest))
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	select {
	case <-w.Watch:
		return nil
	case <-ctx.Done():
		return ctx.Err() // our node is deleted already
	case <-d.s.Done():
		return d.s.Err()
	}
}

// leaveTurn applies the guide's lowest/highest scheme to the participants
// ps, of which node is ps[me] (me < 0: node is deleted already): the
// lowest waits for the highest to go; every other participant deletes its
// node and waits for the lowest to go. It returns the name to wait for.
func (d *DoubleBarrier) leaveTurn(ctx context.Context, node string, ps []contender, me int) (string, error) {
	if me == 0 {
		return ps[len(ps)-1].name, nil // lowest: wait for the highest
	}
	if me > 0 {
		if err := opsOf(d.s).Delete(ctx, node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return "", err
		}
	}
	return ps[0].name, nil // wait for the lowest
}

// dropReady deletes the ready node once everyone has left, so the
// directory (a container) goes away.
func (d *DoubleBarrier) dropReady(ctx context.Context) error {
	err := opsOf(d.s).Delete(ctx, d.readyPath(), -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// Raised reports whether the barrier is up (its node exists).
func (b *Barrier) Raised(ctx context.Context) (bool, error) {
	if b.err != nil {
		return false, b.err
	}
	return b.s.Exists(ctx, b.node)
}

// DoubleBarrierState is a snapshot of a double barrier.
type DoubleBarrierState struct {
	Participants []Holder // entered participants in order, with owner metadata (Holds is true for all)
	Ready        bool     // the ready node exists: Size participants had entered
}

// State returns the participants that have entered and not left, and
// whether the barrier is ready.
func (d *DoubleBarrier) State(ctx context.Context) (DoubleBarrierState, error) {
	var st DoubleBarrierState
	if d.err != nil {
		return st, d.err
	}
	ps, err := listHolders(ctx, d.s, d.dir, curatorParticipants)
	if err != nil {
		return st, err
	}
	st.Participants = ps
	st.Ready, err = d.s.Exists(ctx, d.readyPath())
	return st, err
}
