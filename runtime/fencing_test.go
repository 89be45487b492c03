package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A guarded write happens only while the lock is held: after the holder's
// node is reaped, or its session expires, it fails with ErrLockLost and
// writes nothing.
func TestGuardedWrite(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	obs := connect(t, srv.Servers())
	data := dir + "-data"
	acl := zk.WorldACL(zk.PermAll)
	if _, err := obs.Conn().Create("/zkgen-test", nil, 0, acl); err != nil && err != zk.ErrNodeExists {
		t.Fatal(err)
	}
	if _, err := obs.Conn().Create(data, []byte("v0"), 0, acl); err != nil {
		t.Fatal(err)
	}
	value := func() string {
		b, _, err := obs.Conn().Get(data)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	l := runtime.NewLock(connect(t, srv.Servers()), runtime.At(dir))
	if _, err := l.Guarded(ctx, &zk.SetDataRequest{Path: data, Data: []byte("x"), Version: -1}); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("Guarded before Lock = %v, want ErrNotHeld", err)
	}
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := l.Guarded(ctx, &zk.SetDataRequest{Path: data, Data: []byte("v1"), Version: -1})
	if err != nil || len(res) != 1 || value() != "v1" {
		t.Fatalf("Guarded while held = %v, %v; value %q", res, err, value())
	}
	// An op failing on its own fails the whole multi, reported as that op's error.
	if _, err := l.Guarded(ctx, &zk.SetDataRequest{Path: data, Data: []byte("v2"), Version: 99}); !errors.Is(err, zk.ErrBadVersion) || value() != "v1" {
		t.Fatalf("Guarded with a bad version = %v, value %q", err, value())
	}
	work := l.Context()
	if _, err := l.Reap(ctx, -time.Hour); err != nil {
		t.Fatal(err)
	}
	<-l.Lost()
	<-work.Done()
	if !errors.Is(context.Cause(work), runtime.ErrLockLost) {
		t.Fatalf("context cause after reap = %v", context.Cause(work))
	}
	if _, err := l.Guarded(ctx, &zk.SetDataRequest{Path: data, Data: []byte("stale"), Version: -1}); !errors.Is(err, runtime.ErrLockLost) {
		t.Fatalf("Guarded after reap = %v, want ErrLockLost", err)
	}
	if v := value(); v != "v1" {
		t.Fatalf("a guarded write after loss changed the data to %q", v)
	}
	l.Unlock(ctx)

	// Session expiry.
	p := zktest.NewProxy(t, srv.Addr())
	s := connect(t, []string{p.Addr()})
	l2 := runtime.NewLock(s, runtime.At(dir))
	if err := l2.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	creds, _ := p.Session(s.ID())
	zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
	<-l2.Lost()
	if _, err := l2.Guarded(ctx, &zk.SetDataRequest{Path: data, Data: []byte("stale"), Version: -1}); !errors.Is(err, runtime.ErrLockLost) {
		t.Fatalf("Guarded after expiry = %v, want ErrLockLost", err)
	}
	if v := value(); v != "v1" {
		t.Fatalf("a guarded write after expiry changed the data to %q", v)
	}
}

// The lock's context is cancelled on Unlock too, with cause ErrNotHeld.
func TestLockContextOnUnlock(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	l := runtime.NewLock(connect(t, srv.Servers()), runtime.At(testRoot(t)))
	if err := l.Context().Err(); err == nil {
		t.Fatal("context of an unheld lock must be done")
	}
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	work := l.Context()
	if work.Err() != nil {
		t.Fatal("context done while held")
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	<-work.Done()
	if c := context.Cause(work); !errors.Is(c, runtime.ErrNotHeld) || errors.Is(c, runtime.ErrLockLost) {
		t.Fatalf("cause after Unlock = %v", c)
	}
}
