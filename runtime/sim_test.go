package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
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
		defer settleBubble()
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

// Random faults from a seed, on virtual time: contenders for one lock on
// 4 s sessions, every request hit by a fault with probability 3% (cut
// before or after it, replies held after it). Tenures never overlap: a
// tenure runs from Lock's return until its holder stops acting — it calls
// Unlock, or is told the lock is lost (Lost) — and no two intersect.
// The seed is printed; a failure is replayed with it.
//
// ZKGEN_SIM_SEEDS=n runs seeds 1..n instead of 1..3. The seed fixes the
// faults' draws, not the goroutines' interleaving, so a replay is likely,
// not certain, to take the same path.
func TestSimRandomFaultsLock(t *testing.T) {
	seeds := 3
	if n, err := strconv.Atoi(os.Getenv("ZKGEN_SIM_SEEDS")); err == nil && n > 0 {
		seeds = n
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { randomFaultsLock(t, seed, 1, 0) })
		})
		// An ensemble of three whose followers lag 150 ms and 300 ms:
		// contenders on any server, reads there stale.
		t.Run(fmt.Sprint("ensemble/seed=", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { randomFaultsLock(t, seed, 3, 150*time.Millisecond) })
		})
	}
}

func randomFaultsLock(t *testing.T, seed uint64, servers int, lag time.Duration) {
	defer settleBubble()
	srv := sim.NewEnsemble(servers, sim.WithRandomFaults(seed, 0.03))
	defer srv.Close()
	for i := 1; i < servers; i++ {
		srv.SetDelay(i, time.Duration(i)*lag)
	}
	addrs := srv.Servers()
	type span struct {
		who        int
		start, end time.Time
	}
	var mu sync.Mutex
	var spans []span
	var wg sync.WaitGroup
	const contenders, rounds = 3, 15
	for i := range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				s, err := runtime.Connect(ctx, addrs, runtime.WithDialer(srv.DialContext),
					runtime.WithSessionTimeout(4*time.Second), runtime.WithLogger(slog.New(slog.DiscardHandler)))
				if err != nil {
					cancel()
					continue // the connect itself was hit: again
				}
				l := runtime.NewLock(s, runtime.At("/rf/lock"))
				for ; r < rounds; r++ {
					if err := l.Lock(ctx); err != nil {
						break
					}
					sp := span{who: i, start: time.Now()}
					lost := l.Lost()
					select {
					case <-lost:
					case <-time.After(50 * time.Millisecond): // the work
					}
					sp.end = time.Now() // told lost, or done: it acts no more
					_ = l.Unlock(ctx)
					mu.Lock()
					spans = append(spans, sp)
					mu.Unlock()
					if s.Err() != nil {
						break
					}
				}
				s.Close()
				cancel()
			}
		}()
	}
	wg.Wait()
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if a.start.Before(b.end) && b.start.Before(a.end) {
				t.Errorf("seed %d: tenures overlap: %d %v..%v and %d %v..%v", seed, a.who, a.start, a.end, b.who, b.start, b.end)
			}
		}
	}
	log := srv.FaultLog()
	t.Logf("seed %d: %d tenures, %d faults", seed, len(spans), len(log))
	if len(log) == 0 {
		t.Errorf("seed %d: no fault was injected", seed)
	}
}

// A tenure's loss told before its session's end: the server deletes an
// expired session's ephemeral nodes, firing their watches, before it
// closes the connection, so fn may return ErrLockLost while the session
// still looks alive. Supervise must take it for the session's end and run
// fn again on a new session, not return the error (the service would stop
// for good). fn here expires its own session and returns at once, before
// the client can have heard of the expiry.
func TestSuperviseLossBeforeSessionEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer settleBubble()
		srv := sim.New()
		defer srv.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		runs := 0
		err := runtime.Supervise(ctx, []string{"127.0.0.1:2181"}, func(ctx context.Context, s *runtime.Session) error {
			runs++
			if runs == 2 {
				cancel() // the second run is the proof: done
				return nil
			}
			srv.ExpireSession(s.ID())
			return fmt.Errorf("work: %w", runtime.ErrLockLost)
		}, runtime.WithDialer(srv.DialContext), runtime.WithSessionTimeout(4*time.Second),
			runtime.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil || runs != 2 {
			t.Fatalf("Supervise = %v after %d runs; want fn run again on a new session", err, runs)
		}
	})
}
