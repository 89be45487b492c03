package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// rwSide returns a queueContender side: the read (write false) or write
// side of the read/write lock at dir.
func rwSide(dir string, write bool) func(*runtime.Session) runtime.LockHandle {
	return func(s *runtime.Session) runtime.LockHandle {
		rw := runtime.NewRWLock(s, runtime.At(dir))
		if write {
			return rw.Write()
		}
		return rw.Read()
	}
}

// heldRW starts a read/write lock test: a server, a test root dir, and the
// given side of the lock held by the admin session.
func heldRW(t *testing.T, write bool) (*zktest.Server, context.Context, string, *runtime.Session, runtime.LockHandle) {
	t.Helper()
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	h := rwSide(dir, write)(admin)
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	return srv, ctx, dir, admin, h
}

// relisted waits until w has sent its n-th children read and the server
// has answered its (n+1)-th read, which watches a blocker: it listed again
// and waits again.
func (w *handOffWaiter) relisted(t *testing.T, ctx context.Context, n int64) {
	t.Helper()
	for _, reach := range []<-chan struct{}{w.px.RequestsReach(zktest.OpGetChildren2, n), w.px.RepliesReach(zktest.OpGetData, n+1)} {
		select {
		case <-reach:
		case err := <-w.got:
			t.Fatalf("the waiter took the lock (%v) while another holds it", err)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	w.waiting(t, "the waiter")
}

// Readers queued behind the first writer all hold when it releases, without
// listing again: each lists once, on entry, and gets a token above the
// writer's.
func TestRWLockHandOffReaders(t *testing.T) {
	srv, ctx, dir, admin, w := heldRW(t, true)
	rs := make([]*handOffWaiter, 3)
	for i := range rs {
		rs[i] = queueContender(t, ctx, srv, admin, dir, i+2, rwSide(dir, false))
	}
	token := w.Token()
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		r.holds(t, ctx)
		if r.l.Token() <= token {
			t.Errorf("reader %d: token %d, not above the writer's %d", i, r.l.Token(), token)
		}
		r.counted(t, fmt.Sprint("reader ", i), 1, 1) // listed on entry only
	}
}

// A writer queued behind two readers that hold watches the nearer one. When
// that one releases, the other still holds: the writer lists again and
// waits. When the first reader releases, the writer holds without another
// listing (its blocker was then the first node).
func TestRWLockHandOffWriterBehindReaders(t *testing.T) {
	srv, ctx, dir, admin, r1 := heldRW(t, false)
	r2 := rwSide(dir, false)(connect(t, srv.Servers()))
	if err := r2.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	w := queueContender(t, ctx, srv, admin, dir, 3, rwSide(dir, true))
	if err := r2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	w.relisted(t, ctx, 2)
	if err := r1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	w.holds(t, ctx)
	w.counted(t, "the writer", 2, 1)
}

// A reader queued behind two writers watches the nearer, which gives up
// (its Lock cancelled): the reader lists again and waits for the first
// writer, which still holds, and holds once it released, without a third
// listing.
func TestRWLockHandOffReaderBehindTwoWriters(t *testing.T) {
	srv, ctx, dir, admin, w1 := heldRW(t, true)
	w2ctx, cancelW2 := context.WithCancel(ctx)
	defer cancelW2()
	w2 := queueContender(t, w2ctx, srv, admin, dir, 2, rwSide(dir, true))
	r := queueContender(t, ctx, srv, admin, dir, 3, rwSide(dir, false))
	cancelW2()
	if err := <-w2.got; err == nil {
		t.Fatal("the cancelled Lock returned nil")
	}
	r.relisted(t, ctx, 2)
	if err := w1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r.holds(t, ctx)
	r.counted(t, "the reader", 2, 1)
}
