package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// --- Multi-lock
//
// LockAll takes several locks as one: all or none. Deadlock between callers
// that want overlapping sets is avoided by resource ordering: every caller
// takes its members in one canonical order — by path, whatever order it
// passed them in — so no two callers can each hold a member the other is
// waiting for (a cycle of waits would need some caller to wait for a path
// below one it holds). Curator's InterProcessMultiLock takes its locks in the
// caller's order, so two callers passing {A, B} and {B, A} can deadlock.

// Locker is one member of a multi-lock (LockAll): an exclusive lock, one
// side of a read/write lock (RWLock.Read, RWLock.Write) or a semaphore
// participant (*Semaphore, which takes one lease). LockHandle and
// SemaphoreHandle satisfy it.
type Locker interface {
	// Path is the member's directory, the key of the canonical order.
	Path() string
	// Lock blocks until the member is held, ctx ends or the session ends.
	Lock(ctx context.Context) error
	// Unlock releases the member.
	Unlock(ctx context.Context) error
	// Lost is closed when the member's tenure ends.
	Lost() <-chan struct{}
}

// LockGroup is a set of locks held together, from LockAll: held until
// Unlock, or lost as soon as any member is lost (Lost, Context).
type LockGroup struct {
	members []Locker // in canonical (path) order
	lost    chan struct{}
	stop    chan struct{}
	ctx     context.Context
	cancel  context.CancelCauseFunc

	mu       sync.Mutex
	released bool
	lostOnce sync.Once
	watched  sync.WaitGroup
}

// ErrDuplicateMember is returned by LockAll when two members share a path:
// the second would wait for the first forever (a write side behind a read
// side of one read/write lock), or the same handle was passed twice.
var ErrDuplicateMember = errors.New("two members of one multi-lock share a path")

// LockAll acquires every member, all or none, in one canonical order (by
// path) whatever order they are passed in, so callers that ask for
// overlapping sets in different orders never deadlock. It returns when all
// are held, or with the first error — ctx's end, a session's end, a member
// that cannot be locked — after releasing the members it had taken
// (best effort, with a fresh bounded context), so nothing stays held.
//
// The members may be on different sessions. Two members with one path are
// refused (ErrDuplicateMember), and so is an empty list. The group's Lost
// fires when any member is lost; Unlock releases every member. With
// telemetry (of the first member's session that has some) the acquisition
// is one zkgen.lock.all span, the parent of the members' acquisitions.
func LockAll(ctx context.Context, locks ...Locker) (_ *LockGroup, err error) {
	if len(locks) == 0 {
		return nil, errors.New("LockAll: no locks given")
	}
	ms := slices.Clone(locks)
	for i, m := range ms {
		if m == nil {
			return nil, fmt.Errorf("LockAll: member %d is nil", i)
		}
	}
	slices.SortStableFunc(ms, func(a, b Locker) int { return strings.Compare(a.Path(), b.Path()) })
	for i := 1; i < len(ms); i++ {
		if ms[i].Path() == ms[i-1].Path() {
			return nil, fmt.Errorf("LockAll: %s: %w", ms[i].Path(), ErrDuplicateMember)
		}
	}
	ctx, sp := lockAll(ctx, ms)
	defer sp.end(&err)
	for i, m := range ms {
		if err := m.Lock(ctx); err != nil {
			if uerr := unlockAll(ms[:i]); uerr != nil {
				err = client.JoinErrors(err, uerr)
			}
			return nil, fmt.Errorf("LockAll: %s: %w", m.Path(), err)
		}
	}
	g := &LockGroup{members: ms, lost: make(chan struct{}), stop: make(chan struct{})}
	g.ctx, g.cancel = context.WithCancelCause(context.Background())
	for _, m := range ms {
		g.watched.Add(1)
		go g.watch(m)
	}
	return g, nil
}

// unlockAll releases taken members in reverse order with a fresh bounded
// context; it returns the errors other than a member found lost already.
func unlockAll(ms []Locker) error {
	ctx, cancel := context.WithTimeout(context.Background(), client.CleanupTimeout)
	defer cancel()
	var errs []error
	for i := len(ms) - 1; i >= 0; i-- {
		if err := ms[i].Unlock(ctx); err != nil && !errors.Is(err, ErrLockLost) {
			errs = append(errs, fmt.Errorf("%s: %w", ms[i].Path(), err))
		}
	}
	return client.JoinErrors(errs...)
}

// watch ends the group when m is lost before the group is released.
func (g *LockGroup) watch(m Locker) {
	defer g.watched.Done()
	select {
	case <-m.Lost():
		g.memberLost(m)
	case <-g.stop:
	}
}

// memberLost ends the group on m's loss, unless it was released.
func (g *LockGroup) memberLost(m Locker) {
	g.mu.Lock()
	released := g.released
	g.mu.Unlock()
	if !released {
		g.end(fmt.Errorf("multi-lock member %s: %w", m.Path(), ErrLockLost))
	}
}

func (g *LockGroup) end(cause error) {
	g.lostOnce.Do(func() {
		g.cancel(cause)
		close(g.lost)
	})
}

// Paths returns the members' paths in the order they were taken.
func (g *LockGroup) Paths() []string {
	out := make([]string, len(g.members))
	for i, m := range g.members {
		out[i] = m.Path()
	}
	return out
}

// Lost returns a channel closed when the group ends: a member was lost
// (see Lock.Lost for what is noticed when), or Unlock was called. The
// other members stay held until Unlock. Like a member's, it consults the
// sessions' clocks when called (see Held).
func (g *LockGroup) Lost() <-chan struct{} {
	g.asked()
	return g.lost
}

// Held reports whether the group is still held: not unlocked, and every
// member held by what its process knows, its session's clock included
// (see Lock.Held): the first call after the process was frozen past a
// session timeout says false.
func (g *LockGroup) Held() bool { return g.asked() }

// asked asks each member whether it is still held (each member's Lost
// consults its session's clock) and ends the group if one is not; it
// reports whether the group is on.
func (g *LockGroup) asked() bool {
	select {
	case <-g.lost:
		return false
	default:
	}
	for _, m := range g.members {
		select {
		case <-m.Lost():
			g.memberLost(m)
			return false
		default:
		}
	}
	return true
}

// Context returns a context cancelled when the group ends; context.Cause
// wraps ErrLockLost with the lost member's path, or is ErrNotHeld after
// Unlock. Its Err and Done consult the members' sessions' clocks when
// called (see Held).
func (g *LockGroup) Context() context.Context { return groupContext{g.ctx, g} }

// groupContext is a group's context as the application gets it.
type groupContext struct {
	context.Context
	g *LockGroup
}

// Err returns the context's error after asking the members (see Held).
func (c groupContext) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	c.g.asked()
	return c.Context.Err()
}

// Done returns the context's channel after asking the members (see Held).
func (c groupContext) Done() <-chan struct{} {
	c.g.asked()
	return c.Context.Done()
}

// Unlock releases every member, in the reverse of the order they were
// taken, and returns the errors of those that could not be released
// cleanly (a member found lost gives ErrLockLost). A second call returns
// ErrNotHeld.
func (g *LockGroup) Unlock(ctx context.Context) error {
	g.mu.Lock()
	if g.released {
		g.mu.Unlock()
		return fmt.Errorf("multi-lock: %w", ErrNotHeld)
	}
	g.released = true
	g.mu.Unlock()
	close(g.stop)
	g.watched.Wait()
	var errs []error
	for i := len(g.members) - 1; i >= 0; i-- {
		m := g.members[i]
		if err := m.Unlock(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Path(), err))
		}
	}
	g.end(fmt.Errorf("multi-lock: %w (released)", ErrNotHeld))
	return client.JoinErrors(errs...)
}

// lockAll starts the span of a LockAll of ms (in the order they are
// taken), with the telemetry of the first member that has some: kind
// multi_lock, the members' names and paths joined by commas. The returned
// context parents the members' acquisitions on it.
func lockAll(ctx context.Context, ms []Locker) (context.Context, span) {
	var t *telemetry
	for _, m := range ms {
		if tl, ok := m.(telLocker); ok && t == nil {
			t, _ = tl.telResource()
		}
	}
	if t == nil {
		return ctx, span{}
	}
	names := make([]string, len(ms))
	paths := make([]string, len(ms))
	for i, m := range ms {
		paths[i], names[i] = m.Path(), m.Path()
		if tl, ok := m.(telLocker); ok {
			_, names[i] = tl.telResource()
		}
	}
	sp := t.begin(ctx, opLockAll, "multi_lock", strings.Join(names, ","), strings.Join(paths, ","))
	return sp.context(ctx), sp
}
