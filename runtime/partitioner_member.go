package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// A partitioner member's loop (see Partitioner): read the members and the
// plan when their watches fired, publish a new plan if it leads, release
// what the plan took away, acquire what it gives, and wait for the next
// watch.

// errLeaving ends the loop when Leave was called; errClosing when
// Session.Close was.
var (
	errLeaving = errors.New("partitioner: leaving")
	errClosing = errors.New("partitioner: session closing")
)

// follower is the state of one member's loop; only the loop touches it.
type follower[T any] struct {
	a *Assignment[T]
	p *Partitioner[T]
	s *Session

	memCh, planCh chan struct{} // a watch fired (buffered: one pending is enough)
	freed         chan int      // a waited-for owner node changed
	stop          chan struct{} // closed when the loop ends: stops the forwarders

	members     []string // member node names, join order
	plan        partitionPlan
	planVer     int32
	planExists  bool
	needMembers bool
	needPlan    bool
	waiting     map[int]bool // partitions whose owner node we watch
	undeleted   map[int]bool // released partitions whose owner node is still to delete
	maybe       map[int]bool // partitions whose acquisition failed after its create may have applied
	timer       *time.Timer  // the leader's debounce
	publish     bool         // the debounce elapsed
}

func (a *Assignment[T]) run() {
	defer close(a.done)
	f := &follower[T]{a: a, p: a.p, s: a.s, memCh: make(chan struct{}, 1), planCh: make(chan struct{}, 1),
		freed: make(chan int, a.p.n), stop: make(chan struct{}), needMembers: true, needPlan: true,
		waiting: map[int]bool{}, undeleted: map[int]bool{}, maybe: map[int]bool{}}
	err := f.loop()
	close(f.stop)
	if f.timer != nil {
		f.timer.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), client.CleanupTimeout)
	defer cancel()
	if errors.Is(err, errClosing) {
		f.closeHandOver()
		a.leaveErr = fmt.Errorf("partitioner %s: %w (session closed)", a.h.node, ErrMembershipLost)
		return
	}
	if !errors.Is(err, errLeaving) {
		f.lose(ctx)
		_ = releaseHold(ctx, a.s, a.h) // lost already: only stops its monitor
		a.leaveErr = fmt.Errorf("partitioner %s: %w", a.h.node, ErrMembershipLost)
		return
	}
	if err := f.releaseAll(ctx); err != nil {
		f.lose(ctx)
		a.leaveErr = fmt.Errorf("partitioner %s: %w", a.h.node, err)
		_ = releaseHold(ctx, a.s, a.h)
		return
	}
	rerr := releaseHold(ctx, a.s, a.h)
	if errors.Is(rerr, ErrMembershipLost) {
		a.leaveErr = fmt.Errorf("partitioner %s: %w", a.h.node, ErrMembershipLost)
		return
	}
	a.leaveErr = rerr
	if rerr == nil {
		a.p.cleanUp(ctx)
	}
}

// closeHandOver reports every partition released before Session.Close
// closes the session: the releasing hooks, then every read Owned stream
// handing its reader a set without them. The owner nodes are left to the
// session's close, which removes them at once. The membership's own end
// (its monitor sees the session's) is left to the session too.
func (f *follower[T]) closeHandOver() {
	owned := f.a.Current()
	f.releasing(owned)
	for _, i := range owned {
		f.a.waitHandedOver(i)
		f.a.waitGuards(i)
	}
}

// lose ends every ownership after the assignment was lost: the hooks are
// told, and while the session lives (the member node was deleted by
// someone else) the owner nodes are deleted too.
func (f *follower[T]) lose(ctx context.Context) {
	if f.s.Err() == nil {
		if err := f.releaseAll(ctx); err == nil {
			return
		}
	}
	f.releasing(f.a.Current())
}

func (f *follower[T]) releaseAll(ctx context.Context) error {
	if err := f.settleMaybe(ctx); err != nil {
		return err
	}
	if err := f.deletePending(ctx); err != nil {
		return err
	}
	return f.release(ctx, f.a.Current())
}

// settleMaybe finds out whether the acquisitions that ended in an error
// (the membership's end cancelled them, a reply was lost) created their
// owner node after all, and marks the nodes of this session for deletion:
// an owner node the member does not know it has would stay, unowned by
// any handle, for the rest of the session.
func (f *follower[T]) settleMaybe(ctx context.Context) error {
	for _, i := range slices.Sorted(maps.Keys(f.maybe)) { // one order of reads on a replay
		_, st, err := opsOf(f.s).Get(ctx, f.p.ownerNode(i))
		switch {
		case client.IsNoNode(err):
		case err != nil:
			return err
		case st.EphemeralOwner == f.s.ID():
			f.undeleted[i] = true
		}
		delete(f.maybe, i)
	}
	return nil
}

// loop follows the plan until Leave (errLeaving) or the loss of the
// membership (the hold's loss error).
func (f *follower[T]) loop() error {
	ctx := f.a.h.context() // ends when the membership is lost
	failures, key := 0, opsOf(f.s).BackoffKey()
	for {
		err := f.step(ctx)
		switch {
		case err == nil:
			failures = 0
		case ctx.Err() != nil || f.s.Err() != nil:
			return ErrMembershipLost
		default:
			failures++
			opsOf(f.s).Log().Warn("partitioner: step failed; retrying", "path", f.p.dir, "err", err)
			f.needMembers, f.needPlan = true, true
			if opsOf(f.s).Sleep(ctx, opsOf(f.s).Backoff(key, min(failures, 10))) != nil {
				return ErrMembershipLost
			}
			continue
		}
		if err := f.wait(); err != nil {
			return err
		}
	}
}

// wait blocks until something the member follows changed, then takes
// every change that is ready (takeReady): what the next step reads, and
// whether the loop ends, do not depend on which ready case the select
// picked (Go picks at random; a replay on the simulator must repeat a run).
func (f *follower[T]) wait() error {
	var timerC <-chan time.Time
	if f.timer != nil {
		timerC = f.timer.C
	}
	select {
	case <-f.memCh:
		f.needMembers = true
	case <-f.planCh:
		f.needPlan = true
	case i := <-f.freed:
		delete(f.waiting, i)
	case <-timerC:
		f.timer, f.publish = nil, true
	case <-f.a.leave:
	case <-f.a.closeReq:
	case <-f.a.h.lost:
	}
	return f.takeReady()
}

// takeReady takes, in one order, the changes ready now without waiting:
// the loop's end first (the membership lost, then Leave, then Close),
// else every signal for the next step.
func (f *follower[T]) takeReady() error {
	switch {
	case ready(f.a.h.lost):
		return ErrMembershipLost
	case ready(f.a.leave):
		return errLeaving
	case ready(f.a.closeReq):
		return errClosing
	case ready(f.memCh):
		f.needMembers = true
	}
	if ready(f.planCh) {
		f.needPlan = true
	}
	for more := true; more; {
		select {
		case i := <-f.freed:
			delete(f.waiting, i)
		default:
			more = false
		}
	}
	if f.timer != nil && ready(f.timer.C) {
		f.timer, f.publish = nil, true
	}
	return nil
}

// forward calls fn when w fires, unless the loop ended first.
func (f *follower[T]) forward(w <-chan zk.Event, fn func()) {
	go func() {
		select {
		case <-w:
			fn()
		case <-f.stop:
		}
	}()
}

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// step reads what changed, leads if it must, then releases and acquires.
func (f *follower[T]) step(ctx context.Context) error {
	if err := f.read(ctx); err != nil {
		return err
	}
	if err := f.lead(ctx); err != nil {
		return err
	}
	if err := f.deletePending(ctx); err != nil {
		return err
	}
	planned := f.plan.partitionsOf(f.a.name)
	mine := make(map[int]bool, len(planned))
	for _, i := range planned {
		mine[i] = true
	}
	var drop, want []int
	for _, i := range f.a.Current() {
		if !mine[i] {
			drop = append(drop, i)
		}
	}
	if err := f.release(ctx, drop); err != nil {
		return err
	}
	for _, i := range planned {
		if !f.a.owned[i] && !f.waiting[i] { // the loop is owned's only writer
			want = append(want, i)
		}
	}
	return f.acquire(ctx, want)
}

// inFlight is how many requests a member has in flight at once when it
// acquires or releases many partitions: ZooKeeper answers a session's
// requests in order, so a window of them costs about one round trip, not
// one each.
const inFlight = 64

// read re-reads the members and the plan, when their watches fired.
func (f *follower[T]) read(ctx context.Context) error {
	if f.needMembers {
		r, err := opsOf(f.s).ChildrenW(ctx, f.p.membersDir())
		if err != nil {
			return err
		}
		f.members = f.members[:0]
		for _, c := range groupMembers.sortContenders(r.Kids) {
			f.members = append(f.members, c.name)
		}
		f.needMembers = false
		f.forward(r.Watch, func() { kick(f.memCh) })
		if f.timer != nil {
			f.timer.Reset(f.a.cfg.delay) // debounce: wait for a quiet moment
		}
	}
	if f.needPlan {
		r, exists, err := opsOf(f.s).GetOrExistsW(ctx, f.p.planPath())
		if err != nil {
			return err
		}
		f.plan, f.planExists, f.planVer = partitionPlan{}, exists, 0
		if exists {
			f.plan, f.planVer = decodePlan(r.Data), r.Stat.Version
		}
		f.needPlan = false
		f.forward(r.Watch, func() { kick(f.planCh) })
	}
	return nil
}

// lead publishes a new plan when this member is the leader and the
// membership differs from the plan's, once the debounce has elapsed.
func (f *follower[T]) lead(ctx context.Context) error {
	if len(f.members) == 0 || f.members[0] != f.a.name {
		f.publish = false
		return nil
	}
	want := planPartitions(f.p.n, f.plan, f.members)
	if want.equal(f.plan) {
		f.publish = false
		return nil
	}
	if !f.publish && f.a.cfg.delay > 0 && !f.memberGone() {
		if f.timer == nil {
			f.timer = time.NewTimer(f.a.cfg.delay)
		}
		return nil
	}
	f.publish = false
	data := want.encode()
	var err error
	if f.planExists {
		_, err = opsOf(f.s).SetVersion(ctx, f.p.planPath(), data, f.planVer)
	} else {
		var created bool
		created, err = opsOf(f.s).CreateIfAbsent(ctx, f.p.planPath(), data, 0, f.p.acl)
		if err == nil && !created {
			err = zk.ErrNodeExists
		}
	}
	f.needPlan = true // our own write (or a concurrent one) is read back
	if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNodeExists) {
		return nil // someone wrote meanwhile: read again
	}
	return err
}

// memberGone reports whether a member of the plan is no longer a member:
// its partitions wait for a new plan, which is then published at once
// (only joins are debounced).
func (f *follower[T]) memberGone() bool {
	for _, m := range f.plan.Members {
		if !slices.Contains(f.members, m) {
			return true
		}
	}
	return false
}

// ownerCreated, set by tests only, runs after an owner node's create
// applied and before its read: a test ends the membership there.
var ownerCreated atomic.Pointer[func(partition int)]

// acquireResult is what trying to own one partition found.
type acquireResult struct {
	token int64           // owned: the owner node's creation zxid
	watch <-chan zk.Event // owned by another: fires when that node changes
	err   error
}

// acquire tries to own the partitions is, ascending, with up to inFlight
// requests at once: each is owned (its node created and, with
// WithPartitionFence, fenced), or waited for (the node in the way
// watched). The hooks are called afterwards, from the
// loop's goroutine, in order. It returns the first error; what it could do
// is done, and the next step tries the rest again.
func (f *follower[T]) acquire(ctx context.Context, is []int) error {
	if len(is) == 0 {
		return nil
	}
	acl := opsOf(f.s).NodeACL(f.p.acl)
	if err := opsOf(f.s).Creatable(acl); err != nil {
		return client.OpError("create", f.p.ownerNode(is[0]), err)
	}
	res := make([]acquireResult, len(is))
	opsOf(f.s).Parallel(len(is), inFlight, func(k int) { res[k] = f.tryAcquire(ctx, is[k], acl) })
	var owned []int
	var tokens []int64
	var first error
	for k, i := range is {
		r := res[k]
		delete(f.maybe, i)
		switch {
		case r.err != nil:
			f.maybe[i] = true
			first = cmp.Or(first, r.err)
		case r.watch != nil:
			f.waiting[i] = true
			f.forward(r.watch, func() {
				select {
				case f.freed <- i:
				case <-f.stop:
				}
			})
		default:
			owned, tokens = append(owned, i), append(tokens, r.token)
		}
	}
	owned, tokens, ferr := f.fence(ctx, owned, tokens)
	f.acquired(owned, tokens)
	return cmp.Or(first, ferr)
}

// fence runs the fence of WithPartitionFence for the partitions is just
// acquired, up to inFlight at once, and returns those whose fence passed.
// The others are given up at once (their owner nodes deleted, or left to
// the next step's deletePending); the first failure is returned.
func (f *follower[T]) fence(ctx context.Context, is []int, tokens []int64) ([]int, []int64, error) {
	fence := f.a.cfg.fence
	if fence == nil || len(is) == 0 {
		return is, tokens, nil
	}
	errs := make([]error, len(is))
	opsOf(f.s).Parallel(len(is), inFlight, func(k int) { errs[k] = fence(ctx, is[k], tokens[k]) })
	var passed []int
	var passedTokens []int64
	var first error
	for k, i := range is {
		if errs[k] != nil {
			f.undeleted[i] = true
			first = cmp.Or(first, fmt.Errorf("partitioner %s: partition %d: fence: %w", f.p.dir, i, errs[k]))
			continue
		}
		passed, passedTokens = append(passed, i), append(passedTokens, tokens[k])
	}
	if first != nil {
		_ = f.deletePending(ctx) // what fails here is tried again on the next step
	}
	return passed, passedTokens, first
}

// tryAcquire tries to own partition i: it creates the owner node, or
// watches the owner node that is in the way. It touches no state of the
// loop (acquire runs it on several goroutines).
func (f *follower[T]) tryAcquire(ctx context.Context, i int, acl []zk.ACL) acquireResult {
	node := f.p.ownerNode(i)
	for {
		created, err := opsOf(f.s).CreateIfAbsent(ctx, node, []byte(f.a.name), zk.FlagEphemeral, acl)
		if err == nil && !created {
			err = zk.ErrNodeExists // read below: ours if a lost attempt made it
		}
		switch {
		case err == nil:
			if hook := ownerCreated.Load(); hook != nil {
				(*hook)(i)
			}
			// Ours: read its creation zxid, the partition's fencing token
			// (the create's reply carries no stat).
			_, st, gerr := opsOf(f.s).Get(ctx, node)
			switch {
			case client.IsNoNode(gerr):
				continue // deleted by someone else already
			case gerr != nil:
				return acquireResult{err: gerr} // the next step finds the node ours
			case st.EphemeralOwner != f.s.ID():
				continue // deleted and taken by another already: wait for it
			}
			return acquireResult{token: st.Czxid}
		case errors.Is(err, zk.ErrNoNode):
			if err := opsOf(f.s).EnsurePath(ctx, f.p.acl, f.p.ownersDir()); err != nil {
				return acquireResult{err: err}
			}
			continue
		case !errors.Is(err, zk.ErrNodeExists):
			return acquireResult{err: err}
		}
		r, err := opsOf(f.s).GetW(ctx, node)
		if client.IsNoNode(err) {
			continue // released meanwhile: try again
		}
		if err != nil {
			return acquireResult{err: err}
		}
		if r.Stat.EphemeralOwner == f.s.ID() {
			// Ours: the reply of a create that went through was lost. The
			// data watch fires once, when we release it.
			return acquireResult{token: r.Stat.Czxid}
		}
		return acquireResult{watch: r.Watch}
	}
}

// acquired records the partitions is as owned (one change for the Owned
// streams), then calls the acquired hook of each, in order.
func (f *follower[T]) acquired(is []int, tokens []int64) {
	if len(is) == 0 {
		return
	}
	f.a.setOwned(is, true, tokens)
	for _, i := range is {
		telOf(f.s).partitionAcquired(f.p.name, f.p.dir)
		if f.a.cfg.acquired != nil {
			f.a.cfg.acquired(i)
		}
	}
}

// releasing records the partitions is as not owned (one change for the
// Owned streams), then calls the releasing hook of each, in order.
func (f *follower[T]) releasing(is []int) {
	if len(is) == 0 {
		return
	}
	f.a.setOwned(is, false, nil)
	for _, i := range is {
		if f.a.cfg.releasing != nil {
			f.a.cfg.releasing(i)
		}
	}
}

// release gives the partitions is up: the hooks first, then, once every
// Owned stream has handed its reader a set without them and no Guarded
// call of theirs is in flight, the owner nodes. A delete that fails while
// the session lives is tried again on the next step (deletePending),
// before anything is acquired.
func (f *follower[T]) release(ctx context.Context, is []int) error {
	f.releasing(is)
	for _, i := range is {
		f.a.waitHandedOver(i)
		f.a.waitGuards(i)
		f.undeleted[i] = true
	}
	return f.deletePending(ctx)
}

// deletePending deletes the owner nodes of released partitions, up to
// inFlight at once. It returns the first error; the nodes it could not
// delete stay pending.
func (f *follower[T]) deletePending(ctx context.Context) error {
	is := make([]int, 0, len(f.undeleted))
	for i := range f.undeleted {
		is = append(is, i)
	}
	slices.Sort(is)
	errs := make([]error, len(is))
	opsOf(f.s).Parallel(len(is), inFlight, func(k int) {
		if err := opsOf(f.s).DeleteOwned(ctx, f.p.ownerNode(is[k])); err != nil && !client.IsNoNode(err) {
			errs[k] = err
		}
	})
	var first error
	for k, i := range is {
		if errs[k] != nil {
			first = cmp.Or(first, errs[k])
			continue
		}
		delete(f.undeleted, i) // gone (NoNode: deleted by someone else)
	}
	return first
}
