package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// connectSim opens a session on the simulator over an in-memory
// connection.
func connectSim(t *testing.T, srv *sim.Server, opts ...runtime.Option) *runtime.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts = append([]runtime.Option{runtime.WithDialer(srv.DialContext), runtime.WithSessionTimeout(4 * time.Second)}, opts...)
	s, err := runtime.Connect(ctx, []string{"127.0.0.1:2181"} /* the dialer ignores the address */, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The recipes run unchanged on the simulator: a contended lock never has
// two holders and its tokens grow; a queue delivers every item once in
// order; an expired holder's lock is lost and passes on.
func TestRecipesOnSim(t *testing.T) {
	srv := sim.Start(t)
	ctx := testCtx(t, time.Minute)

	const contenders, rounds = 4, 20
	var mu sync.Mutex
	inside, last := 0, int64(0)
	var wg sync.WaitGroup
	for i := range contenders {
		l := runtime.NewLock(connectSim(t, srv), runtime.At("/sim/lock"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := l.Lock(ctx); err != nil {
					t.Errorf("contender %d: %v", i, err)
					return
				}
				mu.Lock()
				inside++
				if inside > 1 || l.Token() <= last {
					t.Errorf("contender %d: %d inside, token %d after %d", i, inside, l.Token(), last)
				}
				last = l.Token()
				inside--
				mu.Unlock()
				if err := l.Unlock(ctx); err != nil {
					t.Errorf("contender %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()

	q := runtime.NewQueue(connectSim(t, srv), runtime.At("/sim/q"), runtime.StringCodec())
	for i := range 50 {
		if err := q.Put(ctx, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		v, err := q.Take(ctx)
		if err != nil || v != fmt.Sprint(i) {
			t.Fatalf("take %d: %q, %v", i, v, err)
		}
	}

	s := connectSim(t, srv)
	held := runtime.NewLock(s, runtime.At("/sim/expiry"))
	if err := held.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	lost := held.Lost()
	if !srv.ExpireSession(s.ID()) {
		t.Fatal("the session was not live")
	}
	<-lost
	if !errors.Is(context.Cause(held.Context()), runtime.ErrLockLost) {
		t.Fatalf("cause after expiry: %v", context.Cause(held.Context()))
	}
	next := runtime.NewLock(connectSim(t, srv), runtime.At("/sim/expiry"))
	if err := next.Lock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Virtual time: under testing/synctest the simulator, go-zookeeper and the
// runtime all run on the bubble's clock. A holder on a 10 s session is cut
// off from the server (Isolate): its session clock gives up at 35% of the
// timeout and its lock reports Lost; the server expires the session at
// 10 s and the next contender takes the lock — in milliseconds of wall
// time. An idle virtual minute before that keeps the session (pings).
func TestSimVirtualTimeExpiry(t *testing.T) {
	wall := time.Now()
	synctest.Test(t, func(t *testing.T) {
		srv := sim.New()
		defer srv.Close()
		ctx := context.Background()
		const timeout = 10 * time.Second
		open := func() *runtime.Session {
			s, err := runtime.Connect(ctx, []string{"127.0.0.1:2181"}, runtime.WithDialer(srv.DialContext),
				runtime.WithSessionTimeout(timeout), runtime.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		s, next := open(), open()
		defer s.Close()
		defer next.Close()
		l := runtime.NewLock(s, runtime.At("/vt/lock"))
		if err := l.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute) // idle: pings keep the session
		if !l.Held() {
			t.Fatal("an idle session was lost")
		}
		start := time.Now()
		srv.Isolate(s.ID(), true)
		<-l.Lost()
		gaveUp := time.Since(start)
		if gaveUp >= timeout {
			t.Fatalf("the holder noticed only after %v (timeout %v)", gaveUp, timeout)
		}
		n := runtime.NewLock(next, runtime.At("/vt/lock"))
		if err := n.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if took < timeout {
			t.Fatalf("the next holder got the lock %v after the cut, before the server could expire the session (%v)", took, timeout)
		}
		t.Logf("virtual: holder gave up after %v, next holder after %v", gaveUp, took)
	})
	t.Logf("wall time %v", time.Since(wall))
}
