// Package runtimetest builds the values zkgen's handles hand out — a
// semaphore's *runtime.Lease, an election's *runtime.Leadership, a group's
// *runtime.Membership, a partitioner's *runtime.Assignment, an at-least-once
// queue's *runtime.Delivery and a *runtime.TTLLease — for unit tests of code
// that gets them from a faked handle (a generated <Resource>Handle interface
// or coord.API implemented by the test).
//
// Each value is a real one, held on a ZooKeeper simulated in the test
// process (runtime/zktest/sim): no Java, no network, and it behaves as in
// production — Token, Guarded, Lost, Context, Release, Ack all work. The
// test ends a value the ways production does: Take deletes its node as an
// operator or a reaper would (its Lost fires), Expire ends the session
// (every value is lost). A value built by hand (&runtime.Lease{}) is not
// held: its methods return errors wrapping runtime.ErrNotHeld.
package runtimetest

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// Env is a simulated ZooKeeper and a session on it, on which the values are
// held. Its methods fail the test (t.Fatal) when ZooKeeper refuses; they
// must be called from the test's goroutine.
type Env struct {
	tb   testing.TB
	srv  *sim.Server
	sess *runtime.Session
	n    atomic.Int64 // names each value's directory
}

// timeout bounds each call of an Env.
const timeout = 30 * time.Second

// New starts a simulated ZooKeeper and connects a session to it; both are
// closed when the test ends.
func New(tb testing.TB) *Env {
	tb.Helper()
	srv := sim.New(sim.WithTTLNodes(100 * time.Millisecond))
	tb.Cleanup(func() { srv.Close() })
	e := &Env{tb: tb, srv: srv}
	e.sess = e.connect()
	tb.Cleanup(func() { e.sess.Close() })
	return e
}

func (e *Env) connect() *runtime.Session {
	e.tb.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	s, err := runtime.Connect(ctx, e.srv.Servers(), runtime.WithDialer(e.srv.DialContext),
		runtime.WithSessionTimeout(4*time.Second), runtime.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		e.tb.Fatalf("runtimetest: connect: %v", err)
	}
	return s
}

func (e *Env) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), timeout)
}

// dir returns a new directory for one value.
func (e *Env) dir(kind string) runtime.Path {
	return runtime.At(fmt.Sprintf("/runtimetest/%s-%d", kind, e.n.Add(1)))
}

func (e *Env) check(what string, err error) {
	e.tb.Helper()
	if err != nil {
		e.tb.Fatalf("runtimetest: %s: %v", what, err)
	}
}

// Session returns the session the values are held on.
func (e *Env) Session() *runtime.Session { return e.sess }

// Server returns the simulated ZooKeeper, for faults of its own
// (sim.Server's CutConnection, Isolate, ...).
func (e *Env) Server() *sim.Server { return e.srv }

// Take deletes node — a value's Node() — from another session, as an
// operator or zkgen reap would: the value's tenure is lost (Lost closes,
// Context is cancelled, Guarded is refused) once its watch fires.
func (e *Env) Take(node string) {
	e.tb.Helper()
	other := e.connect()
	defer other.Close()
	ctx, cancel := e.ctx()
	defer cancel()
	e.check("take "+node, other.Delete(ctx, node))
}

// Expire expires the session, as ZooKeeper does when it has not heard from
// it for its timeout: every value held on it is lost. The Env's later
// values are held on a new session.
func (e *Env) Expire() {
	e.tb.Helper()
	if !e.srv.ExpireSession(e.sess.ID()) {
		e.tb.Fatalf("runtimetest: expire: session 0x%x is not live", e.sess.ID())
	}
	<-e.sess.Done()
	e.sess = e.connect()
	s := e.sess
	e.tb.Cleanup(func() { s.Close() })
}

// Exists reports whether path exists: a Delivery's Node after Release
// (the item is back in the queue), not after Ack.
func (e *Env) Exists(path string) bool {
	e.tb.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	ok, err := e.sess.Exists(ctx, path)
	e.check("exists "+path, err)
	return ok
}

// acquire runs get with the Env's bound and fails the test on its error.
func acquire[V any](e *Env, what string, get func(ctx context.Context) (V, error)) V {
	e.tb.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	v, err := get(ctx)
	e.check(what, err)
	return v
}

// Lease returns a held lease of a one-lease semaphore.
func (e *Env) Lease() *runtime.Lease {
	e.tb.Helper()
	return acquire(e, "lease", runtime.NewSemaphore(e.sess, e.dir("semaphore"), 1).Acquire)
}

// TTLLease returns a held lease of a one-lease TTL set, for holder, that
// runs out after ttl unless renewed (the simulated server removes its node
// then).
func (e *Env) TTLLease(holder string, ttl time.Duration) *runtime.TTLLease {
	e.tb.Helper()
	ls := runtime.NewTTLLeases(e.sess, e.dir("ttllease"), 1, ttl)
	return acquire(e, "ttl lease", func(ctx context.Context) (*runtime.TTLLease, error) { return ls.Acquire(ctx, holder) })
}

// Leadership returns the leadership of an election that campaigned with
// payload (epoch 1).
func Leadership[T any](e *Env, payload T) *runtime.Leadership[T] {
	e.tb.Helper()
	el := runtime.NewElection(e.sess, e.dir("election"), runtime.JSONCodec[T]())
	return acquire(e, "leadership", func(ctx context.Context) (*runtime.Leadership[T], error) { return el.Campaign(ctx, payload) })
}

// Membership returns the membership of member in a group of its own.
func Membership[T any](e *Env, member T) *runtime.Membership[T] {
	e.tb.Helper()
	g := runtime.NewGroup(e.sess, e.dir("group"), runtime.JSONCodec[T]())
	return acquire(e, "membership", func(ctx context.Context) (*runtime.Membership[T], error) { return g.Join(ctx, member) })
}

// Assignment returns the assignment of member, alone in a partitioner of
// partitions partitions, once it owns them all.
func Assignment[T any](e *Env, member T, partitions int) *runtime.Assignment[T] {
	e.tb.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	var n atomic.Int64
	var once sync.Once
	all := make(chan struct{})
	hooks := runtime.WithPartitionHooks(func(int) {
		if n.Add(1) >= int64(partitions) {
			once.Do(func() { close(all) })
		}
	}, nil)
	a, err := runtime.NewPartitioner(e.sess, e.dir("partitioner"), partitions, runtime.JSONCodec[T]()).Join(ctx, member, hooks)
	e.check("assignment", err)
	select {
	case <-all:
		return a
	case <-a.Lost():
		e.tb.Fatalf("runtimetest: assignment: lost before it owned its %d partitions", partitions)
	case <-ctx.Done():
		e.tb.Fatalf("runtimetest: assignment: did not own its %d partitions within %v", partitions, timeout)
	}
	return nil
}

// Delivery returns a delivery of value (Attempt 1) from an at-least-once
// queue of its own. After its Ack, Exists(d.Node()) is false; after its
// Release, true.
func Delivery[T any](e *Env, value T) *runtime.Delivery[T] {
	e.tb.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	q := runtime.NewAckQueue(e.sess, e.dir("queue"), runtime.JSONCodec[T]())
	e.check("put", q.Put(ctx, value))
	d, err := q.Take(ctx)
	e.check("take", err)
	return d
}
