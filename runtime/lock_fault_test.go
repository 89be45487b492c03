package runtime_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The connection is cut right after the lock's create reaches the server, so
// the node exists but the client never sees the reply. The client must find
// its node by GUID instead of creating a second one: exactly one node, owned
// by the session, and none left after Unlock.
func TestLockCreateConnectionCut(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	obs := connect(t, srv.Servers())
	// The directory exists, so the create that gets cut does create a node.
	makeDirs(t, obs, "/zkgen-test", dir)

	for _, contended := range []bool{false, true} {
		var holder *runtime.Lock
		if contended {
			holder = runtime.NewLock(connect(t, srv.Servers()), runtime.At(dir))
			if err := holder.Lock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		p := zktest.NewProxy(t, srv.Addr())
		s := connect(t, []string{p.Addr()})
		l := runtime.NewLock(s, runtime.At(dir))
		fired := p.CutAfterRequest(zktest.OpCreate)
		got := make(chan error, 1)
		go func() { got <- l.Lock(ctx) }()
		select {
		case <-fired:
		case <-ctx.Done():
			t.Fatal("the create never passed the proxy")
		}
		if contended {
			waitChildren(t, ctx, obs, dir, 2)
			if err := holder.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-got; err != nil {
			t.Fatalf("Lock across a cut create (contended=%v): %v", contended, err)
		}
		kids := childrenOf(t, obs, dir)
		if len(kids) != 1 {
			t.Fatalf("contended=%v: want exactly one lock node, have %v", contended, kids)
		}
		_, st, err := obs.Conn().Get(dir + "/" + kids[0])
		if err != nil || st.EphemeralOwner != s.ID() {
			t.Fatalf("node %s owner 0x%x, want the cut session 0x%x (%v)", kids[0], st.EphemeralOwner, s.ID(), err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if kids := childrenOf(t, obs, dir); len(kids) != 0 {
			t.Fatalf("contended=%v: orphan nodes after Unlock: %v", contended, kids)
		}
		s.Close()
	}
}

// When the server expires the holder's session, the holder learns it (Lost,
// Session.Done, ErrSessionExpired), the lock passes on, and the session is
// not silently replaced by a new one.
func TestLockLostOnSessionExpiry(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	p := zktest.NewProxy(t, srv.Addr())
	s := connect(t, []string{p.Addr()})
	a := runtime.NewLock(s, runtime.At(dir))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	b := runtime.NewLock(connect(t, srv.Servers()), runtime.At(dir))
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()

	creds, ok := p.Session(s.ID())
	if !ok {
		t.Fatal("proxy did not see the session")
	}
	zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)

	select {
	case <-a.Lost():
	case <-ctx.Done():
		t.Fatal("Lost did not fire after session expiry")
	}
	<-s.Done()
	if !errors.Is(s.Err(), runtime.ErrSessionExpired) {
		t.Fatalf("Session.Err = %v, want ErrSessionExpired", s.Err())
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter after expiry: %v", err)
	}
	if err := a.Unlock(ctx); !errors.Is(err, runtime.ErrLockLost) {
		t.Fatalf("Unlock after expiry = %v, want ErrLockLost", err)
	}
	// The handle refuses to run on the dead session.
	if err := a.Lock(ctx); !errors.Is(err, runtime.ErrSessionExpired) {
		t.Fatalf("Lock on an expired session = %v, want ErrSessionExpired", err)
	}
	if st := s.Conn().State(); st == zk.StateHasSession {
		t.Fatalf("the expired session's connection reconnected (state %v)", st)
	}
	if n := len(p.Sessions()); n != 1 {
		t.Fatalf("%d sessions went through the proxy; the client must not open a new one", n)
	}
}

// A holder cut off from the server (its traffic black-holed) is told it lost
// the lock before the server expires its session and hands the lock on.
func TestLockLostBeforeTakeover(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	p := zktest.NewProxy(t, srv.Addr())
	s := connect(t, []string{p.Addr()}, runtime.WithSessionTimeout(2*time.Second))
	a := runtime.NewLock(s, runtime.At(dir))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	b := runtime.NewLock(connect(t, srv.Servers()), runtime.At(dir))
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()
	waitChildren(t, ctx, connect(t, srv.Servers()), dir, 2)

	p.Blackhole(true)
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	// The server expired a's session, so b holds the lock. By now a must
	// know it lost the lock.
	select {
	case <-a.Lost():
	default:
		t.Fatal("the new holder got the lock before the cut-off holder's Lost fired")
	}
	if !errors.Is(s.Err(), runtime.ErrSessionExpired) {
		t.Fatalf("cut-off session: Err = %v", s.Err())
	}
	p.Blackhole(false)
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
