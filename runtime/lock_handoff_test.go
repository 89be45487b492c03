package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// handOffWaiter is a lock contender on a session of its own behind a
// proxy that counts its requests.
type handOffWaiter struct {
	s   *runtime.Session
	px  *zktest.Proxy
	l   runtime.LockHandle
	got chan error // Lock's result
}

// queueWaiter starts an exclusive lock contender that must wait (see
// queueContender).
func queueWaiter(t *testing.T, ctx context.Context, srv *zktest.Server, admin *runtime.Session, dir string, n int) *handOffWaiter {
	t.Helper()
	return queueContender(t, ctx, srv, admin, dir, n, func(s *runtime.Session) runtime.LockHandle {
		return runtime.NewLock(s, runtime.At(dir))
	})
}

// queueContender starts the Lock of a contender made by side on a new
// session, which must wait, and returns once its node is the n-th child of
// dir and the read that watches its blocker (its second read: the first is
// the spec guard's of dir), sent only after its entry listing's reply, has
// been answered: the watch is set.
func queueContender(t *testing.T, ctx context.Context, srv *zktest.Server, admin *runtime.Session, dir string, n int, side func(*runtime.Session) runtime.LockHandle) *handOffWaiter {
	t.Helper()
	px := zktest.NewProxy(t, srv.Addr())
	s := connectVia(t, px)
	w := &handOffWaiter{s: s, px: px, l: side(s), got: make(chan error, 1)}
	go func() { w.got <- w.l.Lock(ctx) }()
	waitChildren(t, ctx, admin, dir, n)
	select {
	case <-px.RepliesReach(zktest.OpGetData, 2):
	case err := <-w.got:
		t.Fatalf("Lock returned (%v) while another holds the lock", err)
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	return w
}

// holds waits for w's Lock to return, failing on an error.
func (w *handOffWaiter) holds(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case err := <-w.got:
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
	case <-ctx.Done():
		t.Fatalf("waiting for the lock: %v", ctx.Err())
	}
}

// waiting fails if w's Lock has returned.
func (w *handOffWaiter) waiting(t *testing.T, who string) {
	t.Helper()
	select {
	case err := <-w.got:
		t.Fatalf("%s's Lock returned (%v) while another holds the lock", who, err)
	default:
	}
}

// counted checks how many times w listed the directory and how many times
// it took the lock over without a listing.
func (w *handOffWaiter) counted(t *testing.T, who string, listings, handOffs int64) {
	t.Helper()
	handOffCounts(t, who, w.px, w.s, listings, handOffs)
}

// handOffCounts checks the children reads the session s sent through px
// and the times it took over without a listing.
func handOffCounts(t *testing.T, who string, px *zktest.Proxy, s *runtime.Session, listings, handOffs int64) {
	t.Helper()
	if n := px.Requests(zktest.OpGetChildren2); n != listings {
		t.Errorf("%s sent %d children reads; want %d", who, n, listings)
	}
	if n := runtime.HandOffs(s); n != handOffs {
		t.Errorf("%s: %d hand-offs without a listing; want %d", who, n, handOffs)
	}
}

// heldLock starts a test of the hand-off: a server, a test root dir and a
// lock on it held by the admin session.
func heldLock(t *testing.T) (*zktest.Server, context.Context, string, *runtime.Session, *runtime.Lock) {
	t.Helper()
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	a := runtime.NewLock(admin, runtime.At(dir))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	return srv, ctx, dir, admin, a
}

// released is the Released field of dir's record.
func released(t *testing.T, admin *runtime.Session, dir string) string {
	t.Helper()
	data, _, err := admin.Conn().Get(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Released string `json:"released"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("record of %s: %q: %v", dir, data, err)
	}
	return rec.Released
}

// A line of waiters hands the lock on without listing the directory on
// wake-up: the first waiter's blocker was the first node when it listed,
// each next one's blocker was the holder, which says so in the directory's
// record as it releases. Each waiter lists once (on entry), tokens grow,
// and a waiter never holds before its predecessor released.
func TestLockHandOffWithoutListing(t *testing.T) {
	srv, ctx, dir, admin, a := heldLock(t)
	token := a.Token()
	ws := make([]*handOffWaiter, 4)
	for i := range ws {
		ws[i] = queueWaiter(t, ctx, srv, admin, dir, i+2)
	}
	release := func(l runtime.LockHandle) {
		t.Helper()
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	}
	release(a)
	for i, w := range ws {
		w.holds(t, ctx)
		for _, later := range ws[i+1:] {
			later.waiting(t, "a later waiter")
		}
		if w.l.Token() <= token {
			t.Fatalf("waiter %d: token %d after %d", i, w.l.Token(), token)
		}
		token = w.l.Token()
		w.counted(t, fmt.Sprint("waiter ", i), 1, 1) // listed on entry only
		release(w.l)
	}
	if kids := childrenOf(t, admin, dir); len(kids) != 0 {
		t.Fatalf("nodes left: %v", kids)
	}
	if r := released(t, admin, dir); r == "" {
		t.Error("no hand-off note in the record after the last release")
	}
}

// A waiter whose blocker gives up without holding (its Lock cancelled) is
// woken, finds no note naming it, and lists: it goes on waiting for the
// holder, and holds once the holder released.
func TestLockHandOffBlockerGaveUp(t *testing.T) {
	srv, ctx, dir, admin, a := heldLock(t)
	bs := connect(t, srv.Servers())
	bctx, cancelB := context.WithCancel(ctx)
	defer cancelB()
	bgot := make(chan error, 1)
	go func() { bgot <- runtime.NewLock(bs, runtime.At(dir)).Lock(bctx) }()
	waitChildren(t, ctx, admin, dir, 2)
	c := queueWaiter(t, ctx, srv, admin, dir, 3)
	cancelB()
	if err := <-bgot; err == nil {
		t.Fatal("the cancelled Lock returned nil")
	}
	select {
	case <-c.px.RequestsReach(zktest.OpGetChildren2, 2): // listed again: still waits
	case err := <-c.got:
		t.Fatalf("the waiter took the lock (%v) when its blocker gave up, while another holds it", err)
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	c.waiting(t, "the waiter")
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	c.holds(t, ctx)
}

// A holder that is not zkgen's (a peer library's node, released with a
// plain delete) leaves no note: the woken waiter lists, and holds once it
// is first.
func TestLockHandOffAfterPeerRelease(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	makeDirs(t, admin, dir)
	peer := func() string {
		p, err := admin.Conn().CreateProtectedEphemeralSequential(dir+"/lock-", nil, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	x, y := peer(), peer()
	c := queueWaiter(t, ctx, srv, admin, dir, 3)
	if err := admin.Conn().Delete(x, -1); err != nil {
		t.Fatal(err)
	}
	if err := admin.Conn().Delete(y, -1); err != nil {
		t.Fatal(err)
	}
	c.holds(t, ctx)
	c.counted(t, "the waiter", 2, 0) // on entry, on wake-up
}

// A directory the holders may not write (its ACL grants create and delete
// only) takes no note: the release falls back to a plain delete, and the
// next waiter lists.
func TestLockHandOffNoteRefused(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	if _, err := admin.Conn().Create(dir, []byte(`{"zkgen":1,"kind":"lock","layout":"curator"}`), 0,
		zk.WorldACL(zk.PermRead|zk.PermCreate|zk.PermDelete)); err != nil {
		t.Fatal(err)
	}
	a := runtime.NewLock(admin, runtime.At(dir))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	b := queueWaiter(t, ctx, srv, admin, dir, 2)
	c := queueWaiter(t, ctx, srv, admin, dir, 3)
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	b.holds(t, ctx)
	c.waiting(t, "the second waiter")
	if err := b.l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with the note refused: %v", err)
	}
	c.holds(t, ctx)
	if n := runtime.HandOffs(c.s); n != 0 {
		t.Errorf("hand-offs without a listing: %d; want 0 (no note could be written)", n)
	}
	if r := released(t, admin, dir); r != "" {
		t.Errorf("note %q written in a directory its holders may not write", r)
	}
}
