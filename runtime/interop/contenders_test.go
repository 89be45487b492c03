package interop_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// section is what a Go contender takes and gives back each cycle: a lock
// (runtime.LockHandle is one), a leadership, a lease, a counter's add.
type section interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Lost() <-chan struct{}
}

// goContender is one Go participant of a hammer run.
type goContender struct {
	who    string
	lock   section
	mode   string // x, r or s
	cycles int
	hold   time.Duration // inside the critical section
}

// run takes the lock cycles times, telling the referee around each critical
// section.
func (g goContender) run(ctx context.Context, refAddr string) error {
	rc, err := dialReferee(ctx, refAddr, g.who)
	if err != nil {
		return fmt.Errorf("%s: %w", g.who, err)
	}
	defer rc.Close()
	for i := range g.cycles {
		if err := g.lock.Lock(ctx); err != nil {
			return fmt.Errorf("%s cycle %d: lock: %w", g.who, i, err)
		}
		err := g.inside(ctx, rc)
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		uerr := g.lock.Unlock(uctx)
		cancel()
		if err := errors.Join(err, uerr); err != nil {
			return fmt.Errorf("%s cycle %d: %w", g.who, i, err)
		}
	}
	return nil
}

func (g goContender) inside(ctx context.Context, rc *refClient) error {
	if err := rc.enter(ctx, g.mode); err != nil {
		return err
	}
	if g.hold > 0 {
		t := time.NewTimer(g.hold) // the work done under the lock
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		}
	}
	select {
	case <-g.lock.Lost():
		return fmt.Errorf("lock lost inside the critical section")
	default:
	}
	return rc.exit(ctx, g.mode)
}

// hammer runs Go contenders and already started peer processes against one
// referee until all are done. The first failure cancels the rest. It
// returns how long the run took, from the start of the Go contenders.
func hammer(t *testing.T, ctx context.Context, ref *referee, goes []goContender, peers []*peer) time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := time.Now()
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		cancel(fmt.Errorf("another contender failed: %w", err))
	}
	for _, g := range goes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.run(ctx, ref.Addr()); err != nil {
				fail(err)
			}
		}()
	}
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.wait(ctx); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if len(errs) > 0 {
		t.Errorf("referee: %s", ref)
		for _, err := range errs {
			t.Error(err)
		}
		t.FailNow()
	}
	return took
}

// logRun reports a finished run: cycles per contender, reader overlaps and
// the peers' own summaries.
func logRun(t *testing.T, s stats, took time.Duration, peers []*peer) {
	t.Helper()
	var cy []string
	for w, n := range s.cycles {
		cy = append(cy, fmt.Sprintf("%s=%d", w, n))
	}
	slices.Sort(cy)
	t.Logf("%d cycles in %v (%s); hand-offs between libraries %d; reader overlaps %d; max inside at once %d; violations %d",
		s.total, took.Round(time.Millisecond), strings.Join(cy, " "), s.switches, s.overlaps, s.maxIn, len(s.bad))
	if s.switches == 0 {
		t.Errorf("the lock never passed between libraries: the run did not mix them")
	}
	for _, p := range peers {
		for _, l := range p.summaries() {
			t.Logf("  %s: %s", p.name, l)
		}
	}
}

// holdLock takes l and reports the entry to the referee as who, for the
// step-by-step tests; the returned function leaves and unlocks.
func holdLock(t *testing.T, ctx context.Context, ref *referee, who string, l section, mode string) (leave func()) {
	t.Helper()
	if err := l.Lock(ctx); err != nil {
		t.Fatalf("%s: lock: %v; referee: %s", who, err, ref)
	}
	rc, err := dialReferee(ctx, ref.Addr(), who)
	if err != nil {
		t.Fatalf("%s: %v", who, err)
	}
	if err := rc.enter(ctx, mode); err != nil {
		t.Fatalf("%s: enter: %v", who, err)
	}
	var once sync.Once
	leave = func() {
		once.Do(func() {
			if err := rc.exit(ctx, mode); err != nil {
				t.Errorf("%s: exit: %v", who, err)
			}
			rc.Close()
			if err := l.Unlock(ctx); err != nil {
				t.Errorf("%s: unlock: %v", who, err)
			}
		})
	}
	t.Cleanup(leave)
	return leave
}

// mustNotGet checks that l cannot be taken now (TryLock returns false).
func mustNotGet(t *testing.T, ctx context.Context, l runtime.LockHandle, why string) {
	t.Helper()
	ok, err := l.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock (%s): %v", why, err)
	}
	if ok {
		l.Unlock(ctx)
		t.Fatalf("TryLock succeeded although %s", why)
	}
}

// never is the Lost channel of what cannot be lost.
var never = make(chan struct{})

// electionSection is a candidate: Lock campaigns until it is the
// acknowledged leader, Unlock resigns.
type electionSection[T any] struct {
	e       runtime.ElectionHandle[T]
	payload T
	l       *runtime.Leadership[T]
}

func (c *electionSection[T]) Lock(ctx context.Context) (err error) {
	c.l, err = c.e.Campaign(ctx, c.payload)
	return err
}

func (c *electionSection[T]) Unlock(ctx context.Context) error { return c.l.Resign(ctx) }
func (c *electionSection[T]) Lost() <-chan struct{}            { return c.l.Lost() }

// semaphoreSection is a participant of a semaphore: Lock acquires a
// lease, Unlock releases it.
type semaphoreSection struct {
	m runtime.SemaphoreHandle
	l *runtime.Lease
}

func (c *semaphoreSection) Lock(ctx context.Context) (err error) {
	c.l, err = c.m.Acquire(ctx)
	return err
}

func (c *semaphoreSection) Unlock(ctx context.Context) error { return c.l.Release(ctx) }
func (c *semaphoreSection) Lost() <-chan struct{}            { return c.l.Lost() }

// counterSection adds 1 to a counter each cycle (in Lock).
type counterSection struct{ k runtime.CounterHandle }

func (c counterSection) Lock(ctx context.Context) error {
	_, err := c.k.Add(ctx, 1)
	return err
}

func (counterSection) Unlock(context.Context) error { return nil }
func (counterSection) Lost() <-chan struct{}        { return never }

// peerStart is a peer process to start: its arguments (path and referee
// are filled in) and the peer that runs them.
type peerStart struct {
	args  peerArgs
	start func(t *testing.T, a peerArgs) *peer
}

// mixed runs Go contenders and peer processes on path under one referee
// that admits leases s holders, until all are done, and checks that every
// contender completed its cycles without a violation. It logs the run and
// returns the referee's figures and the peers.
func mixed(t *testing.T, ctx context.Context, path string, leases int, goes []goContender, starts []peerStart) (stats, []*peer) {
	t.Helper()
	want := map[string]int{}
	for _, g := range goes {
		want[g.who] = g.cycles
	}
	for _, p := range starts {
		p.args.who(want)
	}
	ref := newReferee(t, len(want))
	ref.setLeases(leases)
	var peers []*peer
	for _, p := range starts {
		a := p.args
		a.path, a.referee = path, ref.Addr()
		peers = append(peers, p.start(t, a))
	}
	took := hammer(t, ctx, ref, goes, peers)
	st := ref.check(t, want)
	logRun(t, st, took, peers)
	return st, peers
}
