package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
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
