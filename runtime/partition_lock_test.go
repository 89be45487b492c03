package runtime_test

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A lock holder whose server list holds only server X, and two waiters
// whose server lists hold only the other two. X is cut off from the others:
// it stops serving and drops the holder's connection, the holder cannot
// reach any other server, and the majority expires its session once the
// session timeout has passed, which hands the lock to a waiter. The holder
// must be told it lost the lock (Lost closes, or its session ends) strictly
// before any waiter's Lock returns: both instants are recorded, and each
// waiter also checks, when its Lock returns, that the holder has been told.
// The waiters then get the lock one after the other, with growing tokens.
//
// Here the holder works under the lock, fenced writes one after another,
// until it is told: so the server has heard from it just before the cut,
// and so has the leader, to which a follower reports its clients' activity
// every half tick. (TestPartitionLockQuietMinorityHolder is the other
// case.)
//
// X is the ensemble's leader in one case (the majority elects another) and
// a follower in the other. Then the partition heals: one leader again, X
// serving, and nothing left in the lock's directory as seen from any
// member.
func TestPartitionLockMinorityHolder(t *testing.T) {
	testLockMinorityHolder(t, false)
}

// The same, but the holder is quiet under the lock (its client only pings
// the server), and X is cut off at the worst moment for the holder's own
// clock: right after it answered a ping, and then a read. The holder has
// heard from its server at the last moment, but if X is a follower, the
// leader may not have: a follower reports its clients' activity to the
// leader every half tick, and the report of that last ping and read is cut
// off with it. So the leader last heard of the session a ping interval
// (a third of the session timeout) before the holder last heard from X.
func TestPartitionLockQuietMinorityHolder(t *testing.T) {
	testLockMinorityHolder(t, true)
}

func testLockMinorityHolder(t *testing.T, quiet bool) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	e := zktest.StartEnsemble(t, 3, zktest.WithQuorumFaults())
	t.Run("leader", func(t *testing.T) {
		x, err := e.WaitQuorum(settleQuorum)
		if err != nil {
			t.Fatal(err)
		}
		lockMinorityHolder(t, e, x, quiet)
	})
	t.Run("follower", func(t *testing.T) {
		lockMinorityHolder(t, e, follower(t, e), quiet)
	})
}

func lockMinorityHolder(t *testing.T, e *zktest.Ensemble, x int, quiet bool) {
	clk := newClock()
	ctx := testCtx(t, 2*time.Minute)
	dir := testRoot(t)
	majority := othersThan(e, x)
	leaderBefore, err := e.WaitQuorum(settleQuorum)
	if err != nil {
		t.Fatal(err)
	}

	// The holder reaches X through a proxy, only to see its pings pass.
	px := zktest.NewProxy(t, e.Server(x).Addr())
	holderS := connect(t, []string{px.Addr()}, runtime.WithSessionTimeout(minorityTimeout))
	holder := runtime.NewLock(holderS, runtime.At(dir))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	lost := holder.Lost()
	holderToken := holder.Token()
	told := func() bool { return closed(lost) || closed(holderS.Done()) }

	// The waiters queue up behind the holder.
	type grant struct {
		waiter     int
		at         time.Duration // Lock returned
		unlockAt   time.Duration // Unlock called
		token      int64
		holderTold bool // when Lock returned
		err        error
	}
	const waiters = 2
	grants := make(chan grant, waiters)
	var wsess []*runtime.Session
	for i := range waiters {
		s := connect(t, memberAddrs(e, majority...), runtime.WithSessionTimeout(survivorTimeout))
		wsess = append(wsess, s)
		l := runtime.NewLock(s, runtime.At(dir))
		go func() {
			err := l.Lock(ctx)
			g := grant{waiter: i, at: clk.now(), holderTold: told(), token: l.Token(), err: err}
			if err == nil {
				g.unlockAt = clk.now()
				if uerr := l.Unlock(ctx); uerr != nil {
					g.err = fmt.Errorf("Unlock: %w", uerr)
				}
			}
			grants <- g
		}()
	}
	waitChildren(t, ctx, wsess[0], dir, 1+waiters)

	var lastFenced atomic.Int64 // instant of the holder's last fenced write
	if quiet {
		// Two pings pass: the holder has been quiet for a ping interval.
		// Right after the second, the holder reads (so X has answered the
		// ping too).
		awaitPings(t, px, 2)
		pingAt := clk.now()
		if _, _, err := holderS.Conn().Exists(dir); err != nil {
			t.Fatal(err)
		}
		t.Logf("ping seen at %v, read answered at %v", pingAt, clk.now())
	} else {
		// The holder writes under the lock until it is told it lost it.
		working := make(chan struct{})
		go func() {
			for n := 0; !told(); n++ {
				if _, err := holder.Guarded(ctx); err == nil {
					lastFenced.Store(int64(clk.now()))
					if n == 20 {
						close(working)
					}
					continue
				}
				n-- // cut off: try again shortly, until told
				select {
				case <-lost:
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
		select {
		case <-working:
		case <-ctx.Done():
			t.Fatal("the holder could not write under the lock")
		}
	}
	cutAt := clk.now()
	if err := e.Isolate(x); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Heal() })

	// The holder's loss and the waiters' grants, in whatever order they
	// come: a grant before the loss fails at once.
	var toldAt time.Duration
	var got []grant
	for lostCh := lost; toldAt == 0 || len(got) < waiters; {
		select {
		case <-lostCh:
			toldAt = clk.now()
			lostCh = nil
		case g := <-grants:
			if g.err == nil && !g.holderTold {
				t.Fatalf("waiter %d got the lock (token %d) at %v, member %d cut off at %v, and the holder (token %d) had not been told it lost it",
					g.waiter, g.token, g.at, x, cutAt, holderToken)
			}
			got = append(got, g)
		case <-ctx.Done():
			t.Fatalf("cut off at %v: holder told at %v (0: never); grants %+v", cutAt, toldAt, got)
		}
	}
	// The waiters send their grants after they unlock, so the second
	// grant can arrive first: order them by when they were granted.
	slices.SortFunc(got, func(a, b grant) int { return cmp.Compare(a.at, b.at) })
	fenced := ""
	if !quiet {
		fenced = fmt.Sprintf(" (last fenced write at %v)", time.Duration(lastFenced.Load()))
	}
	t.Logf("member %d (leader before: %d) cut off at %v%s; holder told at %v; waiters got the lock at %v and %v",
		x, leaderBefore, cutAt, fenced, toldAt, got[0].at, got[1].at)
	for _, g := range got {
		if g.err != nil {
			t.Fatalf("waiter %d: %v", g.waiter, g.err)
		}
		if !g.holderTold || g.at <= toldAt {
			t.Fatalf("waiter %d got the lock (token %d) at %v, before the cut-off holder (token %d) was told at %v that it lost it",
				g.waiter, g.token, g.at, holderToken, toldAt)
		}
	}
	if !(holderToken < got[0].token && got[0].token < got[1].token) {
		t.Fatalf("tokens %d (holder), %d, %d (waiters, in order) do not increase", holderToken, got[0].token, got[1].token)
	}
	if got[1].at <= got[0].unlockAt {
		t.Fatalf("waiter %d got the lock at %v, before waiter %d unlocked it at %v", got[1].waiter, got[1].at, got[0].waiter, got[0].unlockAt)
	}
	if err := holderS.Err(); !errors.Is(err, runtime.ErrSessionExpired) {
		t.Fatalf("the holder's session: Err = %v, want ErrSessionExpired", err)
	}
	if err := holder.Unlock(ctx); !errors.Is(err, runtime.ErrLockLost) {
		t.Fatalf("the holder's Unlock after the loss: %v, want ErrLockLost", err)
	}
	for i, s := range wsess {
		if err := s.Err(); err != nil {
			t.Fatalf("waiter %d's session did not survive: %v", i, err)
		}
	}

	// Healed: one leader, X serving again, and nothing left anywhere.
	leaderAfter := heal(t, e)
	if mode, err := zktest.Mode(e.Server(x).Addr(), 5*time.Second); err != nil || mode == "" {
		t.Fatalf("member %d after healing: %q, %v", x, mode, err)
	}
	t.Logf("healed: member %d leads", leaderAfter)
	for _, s := range wsess {
		s.Close()
	}
	requireEmptyEverywhere(t, e, dir)
}

// awaitPings returns once n more pings than now have passed the proxy. The
// proxy only counts them, so the count is polled (a local read), briefly so
// as to act within a millisecond or two of a ping, with a deadline.
func awaitPings(t *testing.T, px *zktest.Proxy, n int64) {
	t.Helper()
	want := px.Requests(zktest.OpPing) + n
	deadline := time.Now().Add(time.Duration(n+1) * minorityTimeout)
	for px.Requests(zktest.OpPing) < want {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d pings in %v", n, time.Duration(n+1)*minorityTimeout)
		}
		time.Sleep(time.Millisecond) // polling a counter that has no channel
	}
}
