package runtime_test

import (
	"context"
	"iter"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// TestCacheNeverGoesBack: the cache's session reconnects to a follower
// that lags behind what the cache has shown (the simulator's ensemble,
// on virtual time). The cache never shows an older state: no event takes
// back a change it has shown (a deleted instance back, a value older than
// one shown, a created instance gone), and it ends with the current state.
//
// The follower lags 2.5 s: it refuses the session (the zxid check) at
// go-zookeeper's reconnection attempts 1 s and 2 s after the cut, and
// takes it at 3 s, before the session gives up (3.5 s: 35% of 10 s).
// A lag of 3 s made the follower catch up at the very instant of the third
// attempt: two timers due at once run in either order, and when the
// attempt came first the session gave up before the fourth (4 s), the run
// ended and no Synced came (18 runs in 30 failed).
func TestCacheNeverGoesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer settleBubble()
		srv := sim.NewEnsemble(2)
		defer srv.Close()
		addrs := srv.Servers()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		g := &gatedDialer{srv: srv, only: addrs[0]}
		s, err := runtime.Connect(ctx, addrs[:1], runtime.WithDialer(g.dial),
			runtime.WithSessionTimeout(10*time.Second), runtime.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		w := connectFirst(t, addrs, (&gatedDialer{srv: srv, only: addrs[0]}).dial)
		defer w.Close()
		root := "/cache"
		put(t, w, map[string]string{root + "/a": "1", root + "/b": "1"})
		c := newStrCache(t, runtime.TemplateAt(root).Str("k"))
		rctx, stop := context.WithCancel(ctx)
		ran := make(chan error, 1)
		go func() { ran <- c.Run(rctx, s) }()
		requireContents(t, ctx, c, map[string]string{root + "/a": "1", root + "/b": "1"})
		lctx, unlisten := context.WithCancel(ctx)
		defer unlisten()
		evs := c.Events(lctx)
		<-evs // the initial state: two instances and Synced
		<-evs
		<-evs

		srv.SetDelay(1, 2500*time.Millisecond) // server 1 applies each transaction 2.5 s late
		put(t, w, map[string]string{root + "/a": "2", root + "/c": "1"})
		deleteTree(t, w, root+"/b")
		requireContents(t, ctx, c, map[string]string{root + "/a": "2", root + "/c": "1"})
		g.mu.Lock()
		g.only = addrs[1]
		g.mu.Unlock()
		srv.CutConnection(s.ID()) // the session reconnects, to the lagging server
		var seen []runtime.CacheEvent[string, string]
		gap := false
		for ev := range eventsWhileRunning(t, evs, ran) {
			seen = append(seen, ev)
			switch {
			case ev.Kind == runtime.CacheGap:
				gap = true
			case ev.Kind == runtime.CacheSynced && gap:
				unlisten()
			case gap:
				// Nothing changed since the cache showed the state:
				// any change in the resync goes back.
				t.Errorf("the cache went back after reconnecting to a lagging server: %s", describe(seen))
			}
		}
		requireContents(t, ctx, c, map[string]string{root + "/a": "2", root + "/c": "1"})
		stop()
		<-ran
	})
}

// eventsWhileRunning yields the events of evs until it closes; it fails
// the test if the cache's run ends first (its result on ran): the session
// ended, and no Synced will come.
func eventsWhileRunning(t *testing.T, evs <-chan runtime.CacheEvent[string, string], ran <-chan error) iter.Seq[runtime.CacheEvent[string, string]] {
	return func(yield func(runtime.CacheEvent[string, string]) bool) {
		for {
			select {
			case err := <-ran:
				t.Fatalf("Run returned before the cache resynced: %v", err)
			case ev, ok := <-evs:
				if !ok || !yield(ev) {
					return
				}
			}
		}
	}
}

// TestCacheLeavesNoWatch: two caches on one base and one session share
// the server's watch; when one stops the other still follows changes,
// and when both have stopped the session is told of no more changes
// below the base. On the simulator: ZooKeeper 3.8 cannot remove a
// persistent watch alone (the watch then lasts as long as the
// connection; see docs/caches.md).
func TestCacheLeavesNoWatch(t *testing.T) {
	srv := sim.Start(t)
	ctx := testCtx(t, time.Minute)
	s, w := connectSim(t, srv), connectSim(t, srv)
	root := "/cache"
	got := listen(t, s, root)
	tmpl := runtime.TemplateAt(root).Str("k")
	a, b := newStrCache(t, tmpl), newStrCache(t, tmpl)
	errA, stopA := runCache(t, a, s)
	errB, stopB := runCache(t, b, s)
	requireContents(t, ctx, a, map[string]string{})
	requireContents(t, ctx, b, map[string]string{})
	stopA()
	if err := <-errA; err != nil {
		t.Fatalf("Run: %v", err)
	}
	put(t, w, map[string]string{root + "/x": "1"})
	requireContents(t, ctx, b, map[string]string{root + "/x": "1"})
	stopB()
	if err := <-errB; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for len(got) > 0 {
		<-got
	}
	put(t, w, map[string]string{root + "/x": "2", root + "/y": "1"})
	if _, err := runtime.OpsOf(s).SyncZxid(ctx, root); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("the stopped caches left a watch: %q", <-got)
	}
}

// Get finds every instance by its key, whether the keys are the paths
// (the cache then keeps one map of its entries, not two) or a key
// function gives one instance a key of its own: from then on Get finds
// the earlier instances by their keys as before, and the new one by its
// own; a removed instance is found by neither.
func TestCacheGetByPathOrOwnKey(t *testing.T) {
	inSimBubble(t, func(t *testing.T, srv *sim.Server, s *runtime.Session) {
		ctx := context.Background()
		root := "/keys"
		key := func(p runtime.Params) string { // "x" is keyed "ex", the others by path
			if p.Str(0) == "x" {
				return "ex"
			}
			return p.Path()
		}
		c, err := runtime.NewCache(runtime.TemplateAt(root).Str("k"), key, runtime.StringCodec())
		if err != nil {
			t.Fatal(err)
		}
		runCache(t, c, s)
		has := func(when string, want map[string]string, gone ...string) {
			t.Helper()
			if err := c.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			for k, v := range want {
				if e, ok := c.Get(k); !ok || e.Value != v {
					t.Errorf("%s: Get(%q) = %q, %v; want %q", when, k, e.Value, ok, v)
				}
			}
			for _, k := range gone {
				if e, ok := c.Get(k); ok {
					t.Errorf("%s: Get(%q) = %q; want none", when, k, e.Value)
				}
			}
		}
		put(t, s, map[string]string{root + "/a": "1", root + "/b": "2"})
		has("keyed by path", map[string]string{root + "/a": "1", root + "/b": "2"}, "ex", root+"/x")
		put(t, s, map[string]string{root + "/x": "3"})
		has("one key of its own", map[string]string{root + "/a": "1", root + "/b": "2", "ex": "3"}, root+"/x")
		if err := s.Delete(ctx, root+"/a"); err != nil {
			t.Fatal(err)
		}
		put(t, s, map[string]string{root + "/b": "4"})
		has("after a removal and a change", map[string]string{root + "/b": "4", "ex": "3"}, root+"/a", root+"/x")
	})
}

// Sync called while the cache's run is still on a session that has ended
// (the run's goroutine not yet back from a read) waits for that run's end
// and for the next run, and then returns; it sends nothing on the ended
// session meanwhile. Before, each retry's pause ended at once with the
// session, and Sync spun until the run ended: in a synctest bubble the
// spin kept everything else from running (the search's cache workload
// hung so under the race detector's scheduling), and here the bubble
// never settles.
func TestCacheSyncWaitsOutAnEndedSession(t *testing.T) {
	inSimBubble(t, func(t *testing.T, srv *sim.Server, s *runtime.Session) {
		ctx := context.Background()
		root := "/ended"
		put(t, s, map[string]string{root + "/a": "1"})
		var hold atomic.Bool
		held, release := make(chan struct{}), make(chan struct{})
		runtime.OnCacheListed(func(path string) {
			if path == root && hold.CompareAndSwap(true, false) {
				close(held)
				<-release
			}
		})
		defer runtime.OnCacheListed(nil)
		c := newStrCache(t, runtime.TemplateAt(root).Str("k"))
		ran := make(chan error, 1)
		go func() { ran <- c.Run(ctx, s) }()
		requireContents(t, ctx, c, map[string]string{root + "/a": "1"})

		hold.Store(true)
		srv.CutConnection(s.ID()) // the resync lists the base again, and holds there
		<-held
		s.Close()
		synced := make(chan error, 1)
		go func() { synced <- c.Sync(ctx) }()
		synctest.Wait() // with the spin, never
		select {
		case err := <-synced:
			t.Fatalf("Sync returned %v with no session to sync on", err)
		default:
		}

		close(release)
		<-ran
		s2 := connectSim(t, srv, runtime.WithLogger(slog.New(slog.DiscardHandler)))
		go func() { ran <- c.Run(ctx, s2) }()
		if err := <-synced; err != nil {
			t.Fatalf("Sync on the next run: %v", err)
		}
		s2.Close()
		<-ran
	})
}

// WatchBelow, in one-shot mode: a watch below an instance is set once
// however many ask for it (asking again while it stands costs no
// request), tells each who once when it fires (a child created), and is
// then gone, so that the next call sets it again. On a missing node it is
// an exists watch, which fires when the node is created. In persistent
// mode it sets nothing and tells nobody.
func TestCacheWatchBelow(t *testing.T) {
	inSimBubble(t, func(t *testing.T, _ *sim.Server, s *runtime.Session) {
		ctx := context.Background()
		root := "/below"
		put(t, s, map[string]string{root + "/a": "1"})
		var mu sync.Mutex
		told := map[string]int{}
		note := func(who string) func() {
			return func() {
				mu.Lock()
				told[who]++
				mu.Unlock()
			}
		}
		check := func(when string, want map[string]int) {
			t.Helper()
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			if !maps.Equal(told, want) {
				t.Errorf("%s: told %v, want %v", when, told, want)
			}
		}
		one := newStrCache(t, runtime.TemplateAt(root).Str("k"), runtime.WithOneShotWatches())
		runCache(t, one, s)
		requireContents(t, ctx, one, map[string]string{root + "/a": "1"})
		requests := func() int64 { st := one.Stats(); return st.Lists + st.Reads }
		before := requests()
		if kids, err := one.WatchBelow(ctx, root+"/a", false, true, "x", note("x")); err != nil || len(kids) != 0 {
			t.Fatalf("WatchBelow: %v, %v", kids, err)
		}
		set := requests()
		if set != before+1 {
			t.Errorf("setting the watch took %d requests, want 1", set-before)
		}
		if _, err := one.WatchBelow(ctx, root+"/a", false, false, "y", note("y")); err != nil {
			t.Fatal(err)
		}
		if n := requests(); n != set {
			t.Errorf("asking for a standing watch took %d requests, want none", n-set)
		}
		if n := one.Stats().WatchesBelow; n != 1 {
			t.Errorf("WatchesBelow = %d, want 1", n)
		}
		put(t, s, map[string]string{root + "/a/child": "1"})
		check("after a child was created", map[string]int{"x": 1, "y": 1})
		if n := one.Stats().WatchesBelow; n != 0 {
			t.Errorf("WatchesBelow after it fired = %d, want 0", n)
		}
		put(t, s, map[string]string{root + "/a/child2": "1"}) // no watch stands: nobody is told
		check("after a change with no watch", map[string]int{"x": 1, "y": 1})
		if kids, err := one.WatchBelow(ctx, root+"/a", false, true, "x", note("x")); err != nil || len(kids) != 2 {
			t.Fatalf("WatchBelow again: %v, %v", kids, err)
		}
		if _, err := one.WatchBelow(ctx, root+"/a/later", true, false, "z", note("z")); err != nil {
			t.Fatal(err)
		}
		put(t, s, map[string]string{root + "/a/later": "1"})
		check("after the missing node was created", map[string]int{"x": 2, "y": 1, "z": 1})

		persistent := newStrCache(t, runtime.TemplateAt(root).Str("k"))
		runCache(t, persistent, s)
		requireContents(t, ctx, persistent, map[string]string{root + "/a": "1"})
		if _, err := persistent.WatchBelow(ctx, root+"/a/later", true, false, "p", note("p")); err != nil {
			t.Fatal(err)
		}
		put(t, s, map[string]string{root + "/a/later": "2"})
		check("persistent mode", map[string]int{"x": 2, "y": 1, "z": 1})
	})
}

// inSimBubble runs fn in a synctest bubble with a simulated server and a
// session on it that logs nothing.
func inSimBubble(t *testing.T, fn func(t *testing.T, srv *sim.Server, s *runtime.Session)) {
	synctest.Test(t, func(t *testing.T) {
		defer settleBubble()
		srv := sim.New()
		defer srv.Close()
		fn(t, srv, connectSim(t, srv, runtime.WithLogger(slog.New(slog.DiscardHandler))))
	})
}
